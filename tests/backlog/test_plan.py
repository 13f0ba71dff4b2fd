"""The backlog stage's plan: one shuffle and one Python call per partition for every table,
whatever the mode.

`decided_rows` shuffles the snapshots once (by topic); one `mapInArrow` call per partition sorts
and decides its topics (docs: `quotaplane.backlog.spark.evaluate`). The checks, evictions and
per-topic totals are filters and projections of its rows. The report's series are one more
aggregation (one shuffle, hash-based). A change that adds a pass over the rows fails here.
"""

from __future__ import annotations

import pytest

from quotaplane.backlog.config import parse_backlog_policies
from quotaplane.backlog.records import BACKLOG_SNAPSHOTS
from quotaplane.backlog.spark.evaluate import decided_rows, evaluation
from quotaplane.backlog.spark.report_data import series_frame
from quotaplane.core.spark.session import slot_partitions
from tests.support.differential import records_frame
from tests.support.plans import (
    MAP_IN_ARROW,
    PYTHON_GROUPS,
    SHUFFLE,
    SORT,
    SORT_AGGREGATE,
    WINDOW,
    describe,
    operators,
)

A = "persistent://t/ns/a"
ROWS = [
    {"ts_ms": 100_000, "topic": A, "subscription": "s", "backlog_size_bytes": 5000, "backlog_entries": 50,
     "oldest_unacked_publish_ts_ms": 10_000, "oldest_unacked_ledger_close_ts_ms": 20_000},
    {"ts_ms": 100_000, "topic": A, "subscription": "t", "backlog_size_bytes": 10, "backlog_entries": 1,
     "oldest_unacked_publish_ts_ms": 90_000, "oldest_unacked_ledger_close_ts_ms": 95_000},
    {"ts_ms": 200_000, "topic": "persistent://t/ns/p-partition-1", "subscription": "s",
     "backlog_size_bytes": 0, "backlog_entries": 0, "partitioned_topic": "persistent://t/ns/p"},
]


def _policies(precise: bool) -> object:
    return parse_backlog_policies({
        "broker": {"preciseTimeBasedBacklogQuotaCheck": precise,
                   "backlogQuotaDefaultRetentionPolicy": "consumer_backlog_eviction"},
        "namespaces": {"t/ns": {"message_age": {"limitTime": 5}}},
        "topics": {"persistent://t/ns/p": {"destination_storage": {"limitSize": 0}}}})


@pytest.mark.spark
@pytest.mark.parametrize("precise", [False, True])
def test_every_table_is_one_shuffle_and_one_python_pass(spark, precise: bool) -> None:
    result = evaluation(decided_rows(records_frame(spark, ROWS, BACKLOG_SNAPSHOTS), _policies(precise),
                                       slot_partitions(spark)))
    # Exchange: the repartition by topic; MapInArrow: the one Python call per partition, which
    # sorts its rows itself
    for name, df in (("rows", result.rows), ("checks", result.checks), ("evictions", result.evictions),
                     ("totals", result.totals)):
        ops = operators(df)
        assert (ops[SHUFFLE], ops[MAP_IN_ARROW]) == (1, 1), f"{name}: {describe(df)}"
        assert ops[SORT] == ops[WINDOW] == ops[SORT_AGGREGATE] == ops[PYTHON_GROUPS] == 0, describe(df)
        assert ops["BroadcastExchange"] == 0, describe(df)


@pytest.mark.spark
def test_the_report_series_are_one_hash_aggregation_of_the_checks(spark) -> None:
    checks = evaluation(decided_rows(records_frame(spark, ROWS, BACKLOG_SNAPSHOTS), _policies(False),
                                      slot_partitions(spark))).checks
    df = series_frame(checks, 100_000, 200_000, [A])
    ops = operators(df)
    # the rows' shuffle, then the grouping sets: one Expand, one shuffle of partial aggregates,
    # hash-based (fixed-width buffers)
    assert (ops[SHUFFLE], ops[SORT], ops["Expand"], ops[SORT_AGGREGATE]) == (2, 0, 1, 0), describe(df)
    assert ops["HashAggregate"] == 2, describe(df)


@pytest.mark.spark
def test_the_rows_are_in_the_partitions_asked_for(spark) -> None:
    snapshots = records_frame(spark, ROWS, BACKLOG_SNAPSHOTS)
    assert decided_rows(snapshots, _policies(False), 3).rdd.getNumPartitions() == 3
    assert decided_rows(snapshots, _policies(False), 1).rdd.getNumPartitions() == 1
