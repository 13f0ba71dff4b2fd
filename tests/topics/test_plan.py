"""The physical plans of the topics stage's main tables: how many shuffles, sorts and Python groups.

The stage reads the requests (Parquet, not cached), judges them in ONE `mapInArrow` pass, a group
per broker inside it (thresholds and meters inside the group, no sort, no window), and derives every
other table from the written decisions with hash aggregations. A change that adds a pass over the
rows fails here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from quotaplane.core.spark.readers import check_once, read_telemetry
from quotaplane.core.spark.session import SHUFFLE_PARTITIONS, task_slots
from quotaplane.topics.engine.evaluate import TopicRequest
from quotaplane.topics.records import TOPIC_REQUESTS
from quotaplane.topics.spark.evaluate import decisions, evaluate_requests, meters, observe_meters
from quotaplane.topics.spark.intervals import dropped_log, topic_intervals
from quotaplane.topics.spark.report_data import broker_topic_aggregate
from quotaplane.topics.spark.stage import ROWS_PER_TASK, judging_tasks
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
from tests.topics.strategies import PARTITIONS, request_frame
from tests.topics.test_spark_transforms import CONFIG, REQUESTS

pytestmark = pytest.mark.spark


def counts(df) -> tuple[int, int, int, int, int, int]:
    ops = operators(df)
    return ops[SHUFFLE], ops[SORT], ops[SORT_AGGREGATE], ops[WINDOW], ops[PYTHON_GROUPS], ops[MAP_IN_ARROW]


@pytest.fixture
def used(spark, tmp_path: Path):
    path = tmp_path / "topic_requests"
    request_frame(spark, [*REQUESTS, TopicRequest(9500, 2, "z", 5)]).write.parquet(str(path))
    return check_once(read_telemetry(spark, TOPIC_REQUESTS, str(path)), None).used


def test_judging_is_one_shuffle_and_one_python_group_per_broker(used) -> None:
    rows = used.transform(evaluate_requests(CONFIG, 9500, PARTITIONS))
    # Exchange: the hash partitioning by broker_id; MapInArrow: one Python call per partition,
    # which splits its requests by broker and each broker's by time itself, in numpy. No sort, no
    # window, no join: the thresholds are computed in the group.
    observed, _ = observe_meters(rows)  # the stage writes these; the meters are observed on the way
    for table in (rows, decisions(rows), meters(rows), decisions(observed)):
        assert counts(table) == (1, 0, 0, 0, 0, 1), describe(table)


def test_tables_from_the_decisions_are_hash_aggregates_or_filters(spark, tmp_path: Path, used) -> None:
    path = tmp_path / "topic_decisions"
    decisions(used.transform(evaluate_requests(CONFIG, 9500, PARTITIONS))).write.parquet(str(path))
    decided = spark.read.parquet(str(path))
    # topic_intervals: one shuffle for the (broker, topic, interval) hash aggregation, no sort
    intervals = decided.transform(topic_intervals(CONFIG.interval_ms))
    assert counts(intervals) == (1, 0, 0, 0, 0, 0), describe(intervals)
    # topic_dropped: a filter and a projection
    dropped = decided.transform(dropped_log(CONFIG.message_max_bytes))
    assert counts(dropped) == (0, 0, 0, 0, 0, 0), describe(dropped)
    # the summary's, metrics' and report's aggregate per (broker, topic): one shuffle, a hash
    # aggregation (the threshold source at the last request is a max_by of a boolean: a max_by of
    # the string would make it a SortAggregate)
    totals = broker_topic_aggregate(decided)
    assert counts(totals) == (1, 0, 0, 0, 0, 0), describe(totals)


def test_the_groups_run_in_as_many_tasks_as_the_requests_need(spark) -> None:
    # a task per ROWS_PER_TASK requests begun, at least one per task slot, a multiple of the slots,
    # past the shuffle partitions if the requests need it (a task holds its requests at once); at
    # least every shuffle partition when the slots are unknown
    before = spark.conf.get(SHUFFLE_PARTITIONS)
    spark.conf.set(SHUFFLE_PARTITIONS, "8")
    try:
        assert task_slots(spark) == 2
        needed = [judging_tasks(spark, n) for n in (0, ROWS_PER_TASK, ROWS_PER_TASK + 1,
                                                     5 * ROWS_PER_TASK + 1, 100 * ROWS_PER_TASK)]
        assert needed == [2, 2, 2, 6, 100]

        class Connect:  # a Spark Connect session: no cluster in sight
            conf = spark.conf

        assert judging_tasks(Connect(), 0) == 8
        assert judging_tasks(Connect(), 9 * ROWS_PER_TASK) == 9
    finally:
        spark.conf.set(SHUFFLE_PARTITIONS, before)
