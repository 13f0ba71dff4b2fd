"""The physical plans of the clients stage's main tables: how many shuffles, sorts and Python calls.

The stage reads the requests (Parquet, not cached), hash-partitions them by (config, broker) and
decides each partition in ONE Python call over Arrow (`mapInArrow`: resolution, the per-group
kernels, no sort in the JVM, no join, no per-group call), then derives the intervals and, from
them, the standing and the per-group figures with hash aggregations. A change that adds a pass
over the rows fails here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from quotaplane.clients.engine.entities import DEFAULT, ClientQuotaConfig, QuotaEntity
from quotaplane.clients.engine.settings import ClientQuotaSettings
from quotaplane.clients.records import CLIENT_REQUESTS
from quotaplane.clients.spark.evaluate import TABLE_DROPS, evaluate_requests
from quotaplane.clients.spark.intervals import interval_rows, standing_rows
from quotaplane.clients.spark.partition import output_schema
from quotaplane.core.spark.readers import FILE_ID, POSITION, check_once, read_telemetry
from tests.support.plans import PYTHON_GROUPS, SHUFFLE, SORT, SORT_AGGREGATE, WINDOW, describe, operators

pytestmark = pytest.mark.spark

MAP_IN_ARROW = "MapInArrow"
CONFIG = ClientQuotaConfig({QuotaEntity(DEFAULT, None): {"producer_byte_rate": 1000.0,
                                                         "consumer_byte_rate": 500.0}})
SETTINGS = ClientQuotaSettings(quota_value_metric=True)


def counts(df) -> tuple[int, int, int, int, int, int]:
    ops = operators(df)
    return (ops[SHUFFLE], ops[SORT], ops[SORT_AGGREGATE], ops[WINDOW], ops[PYTHON_GROUPS],
            ops[MAP_IN_ARROW])


@pytest.fixture
def requests(spark, tmp_path: Path):
    path = tmp_path / "client_requests.jsonl"
    rows = [{"ts_ms": 1000 + 100 * i, "broker_id": i % 3, "user": f"u{i % 4}", "client_id": "c",
             "quota_type": ("produce", "fetch", "request")[i % 3], "value": 700.0} for i in range(40)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    parquet = tmp_path / "client_requests"
    spark.read.json(str(path), schema="ts_ms long, broker_id long, user string, client_id string, "
                                      "quota_type string, value double").write.parquet(str(parquet))
    checked = check_once(read_telemetry(spark, CLIENT_REQUESTS, str(parquet), position=True), None)
    return (checked.used.withColumnRenamed(FILE_ID, "_file").withColumnRenamed(POSITION, "_row")
            .withColumn("config_id", F.lit(0).cast("long")))


def test_deciding_is_one_shuffle_and_one_python_call_per_partition(requests) -> None:
    columns = [c for c in output_schema({0: CONFIG}, SETTINGS).names if c not in TABLE_DROPS]
    decided = evaluate_requests(requests, {0: CONFIG}, SETTINGS, partitions=4, columns=columns)
    # Exchange: the hash partitioning by (config, broker); MapInArrow: the one Python call per
    # partition, which sorts in numpy. No sort, no join (resolution is in the call), no Python groups.
    assert counts(decided) == (1, 0, 0, 0, 0, 1), describe(decided)
    assert decided.columns == columns


def test_tables_from_the_decisions_are_hash_aggregates(spark, tmp_path: Path, requests) -> None:
    path = tmp_path / "client_request_decisions"
    evaluate_requests(requests, {0: CONFIG}, SETTINGS).write.parquet(str(path))
    decided = spark.read.parquet(str(path))
    # client_quota_intervals: one shuffle for the (group, interval) hash aggregation; the "at the
    # last request" values are max_by of fixed-width values (a struct would make a SortAggregate)
    intervals = interval_rows(decided, SETTINGS.interval_ms, SETTINGS.quota_value_metric)
    assert counts(intervals) == (1, 0, 0, 0, 0, 0), describe(intervals)
    intervals.write.parquet(str(tmp_path / "intervals"))
    written = spark.read.parquet(str(tmp_path / "intervals"))
    # client_quota_standing with the per-group figures of the summary, metrics and report (last
    # interval's gauges, storage factor counts): one shuffle, one hash aggregation
    groups = standing_rows(written, extra=True)
    assert counts(groups) == (1, 0, 0, 0, 0, 0), describe(groups)
