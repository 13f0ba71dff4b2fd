"""The Spark transforms on small hand-made telemetry: reading, thresholds, decisions, aggregates."""

from __future__ import annotations

from pathlib import Path

import pytest

from quotaplane.core.spark.readers import read_telemetry
from quotaplane.topics.config import parse_topics_config
from quotaplane.topics.engine.evaluate import MeterSnapshot, TopicRequest, evaluate
from quotaplane.topics.engine.thresholds import SINCE_START, ThresholdSchedule
from quotaplane.topics.records import TOPIC_REQUESTS
from quotaplane.topics.spark.evaluate import (
    METER_COLUMNS,
    decisions,
    evaluate_requests,
    meter_table,
    meters,
    observe_meters,
    observed_meters,
)
from quotaplane.topics.spark.intervals import dropped_log, topic_intervals
from tests.support.differential import assert_engines_agree
from tests.topics.strategies import PARTITIONS, request_frame
from tests.topics.test_differential import ENGINES

pytestmark = pytest.mark.spark

CONFIG = parse_topics_config({
    "total.bytes.in.per.sec.threshold": "900",
    "message.max.bytes": "10000",
    "topic.a.bytes.in.per.sec.threshold": "100",
    "topic.a.bytes.in.per.sec.threshold@5000": "",
    "topic.b.bytes.in.per.sec.threshold@5000": "300",
    "topic.b.bytes.in.per.sec.threshold@7000": "900",  # accepted: the explicit sum is 900, the total
    "topic.c.bytes.in.per.sec.threshold@9000": "1",    # rejected: 900 + 1 > 900
})
REQUESTS = [TopicRequest(0, 1, "x", 9000), TopicRequest(4999, 1, "a", 50), TopicRequest(5000, 1, "a", 50),
            TopicRequest(5000, 1, "y", 10_001), TopicRequest(7000, 1, "x", 10), TopicRequest(9000, 1, "b", 1),
            TopicRequest(9000, 2, "x", 1)]


def test_schedule_tables_from_the_config() -> None:
    assert [c.accepted for c in CONFIG.changes] == [True, True, True, True, False]
    schedule = ThresholdSchedule(CONFIG)
    assert schedule.explicit_intervals() == [("a", SINCE_START, 5000, 100), ("b", 5000, 7000, 300),
                                             ("b", 7000, None, 900)]
    assert schedule.steps() == ([SINCE_START, 5000, 5000, 7000], [100, 0, 300, 900], [1, 0, 1, 1])


def test_thresholds_as_of_each_request(spark) -> None:
    rows = request_frame(spark, REQUESTS).transform(evaluate_requests(CONFIG, 9000, PARTITIONS)).transform(
        decisions)
    got = [(r.broker_id, r.ts_ms, r.topic, r.topic_threshold, r.threshold_source)
           for r in rows.orderBy("broker_id", "ts_ms", "topic").collect()]
    assert got == [
        (1, 0, "x", 800, "default"),      # set {a, x}: (900 - 100) // 1
        (1, 4999, "a", 100, "explicit"),
        (1, 5000, "a", 200, "default"),   # set {a, b, x, y}, explicit b=300: (900 - 300) // 3
        (1, 5000, "y", 200, "default"),
        (1, 7000, "x", 0, "default"),     # b=900: (900 - 900) // 3
        (1, 9000, "b", 900, "explicit"),
        (2, 9000, "x", 0, "default"),     # broker 2 set {a, b, x}: c's change was rejected
    ]
    reference = sorted(evaluate(CONFIG, REQUESTS).decisions, key=lambda d: (d.broker_id, d.ts_ms, d.topic))
    assert got == [(d.broker_id, d.ts_ms, d.topic, d.topic_threshold, d.threshold_source) for d in reference]


def test_decisions_meters_and_aggregates_match_the_reference(spark) -> None:
    assert_engines_agree(ENGINES, spark, (CONFIG, 20_000), REQUESTS)
    decided = request_frame(spark, REQUESTS).transform(
        evaluate_requests(CONFIG, 20_000, PARTITIONS)).transform(decisions).cache()
    dropped = decided.transform(dropped_log(CONFIG.message_max_bytes)).orderBy("ts_ms").collect()
    assert [(r.ts_ms, r.topic, r.decision, r.message) for r in dropped] == [
        (5000, "y", "error", "record batch of 10001 bytes exceeds message.max.bytes=10000"),
        (7000, "x", "throttled", "broker bytes-in rate above total.bytes.in.per.sec.threshold=900 and "
         "topic x bytes-in rate above its default threshold 0"),
    ]
    intervals = decided.transform(topic_intervals(5000)).orderBy("broker_id", "topic", "interval_start_ms")
    assert [(r.broker_id, r.topic, r.interval_start_ms, r.requests) for r in intervals.collect()] == [
        (1, "a", 0, 1), (1, "a", 5000, 1), (1, "b", 5000, 1), (1, "x", 0, 1), (1, "x", 5000, 1),
        (1, "y", 5000, 1), (2, "x", 5000, 1)]
    decided.unpersist()


def test_read_quarantines_bad_rows_with_reasons(spark, tmp_path: Path) -> None:
    path = tmp_path / "topic_requests.jsonl"
    path.write_text(
        '{"ts_ms": 1, "broker_id": 1, "topic": "a.b-c_D9", "bytes": 0}\n'
        '{"ts_ms": 1, "broker_id": 1, "topic": "a", "bytes": -1}\n'
        '{"ts_ms": 1, "broker_id": 1, "topic": "a b", "bytes": 1}\n'
        '{"ts_ms": 1, "broker_id": 1, "topic": "..", "bytes": 1}\n'
        '{"ts_ms": 1, "broker_id": 1, "topic": "a\\n", "bytes": 1}\n'
        '{"ts_ms": 1, "broker_id": 1, "topic": "' + "t" * 250 + '", "bytes": 1}\n'
        '{"ts_ms": 1, "broker_id": 1, "bytes": 1}\n')
    result = read_telemetry(spark, TOPIC_REQUESTS, str(path))
    assert [r.topic for r in result.used.collect()] == ["a.b-c_D9"]
    reasons = sorted(r.reason for r in result.quarantined.collect())
    rule = "topic must be 1 to 249 of [a-zA-Z0-9._-] and not '.' or '..'"
    assert reasons == sorted(["bytes must not be negative", rule, rule, rule, rule,
                              "field topic: missing required field"])


def test_the_meters_observed_while_writing_the_decisions_are_the_meter_rows(spark) -> None:
    rows = request_frame(spark, REQUESTS).transform(evaluate_requests(CONFIG, 20_000, PARTITIONS))
    observed, observation = observe_meters(rows)
    assert len(decisions(observed).collect()) == len(REQUESTS)
    got = observed_meters(observation)
    assert got == evaluate(CONFIG, REQUESTS, as_of_ms=20_000).meters  # brokers, then their topics, sorted
    table = [MeterSnapshot(**r.asDict()) for r in meters(rows).collect()]
    assert sorted(got, key=repr) == sorted(table, key=repr)
    assert meters(rows).columns == list(METER_COLUMNS)
    written = meter_table(spark, got, meters(rows).schema)
    assert [MeterSnapshot(**r.asDict()) for r in written.collect()] == got  # each column from its field


def test_the_groups_return_topics_in_the_string_type_spark_sends(spark) -> None:
    # with large Arrow strings Spark sends and expects `large_string`: the topic names come back so
    key = "spark.sql.execution.arrow.useLargeVarTypes"
    before = spark.conf.get(key, None)
    reference = evaluate(CONFIG, REQUESTS).decisions
    expected = sorted((d.broker_id, d.ts_ms, d.topic, d.decision) for d in reference)
    try:
        for large in ("true", "false"):
            spark.conf.set(key, large)
            rows = request_frame(spark, REQUESTS).transform(evaluate_requests(CONFIG, 9000, PARTITIONS))
            got = sorted((r.broker_id, r.ts_ms, r.topic, r.decision) for r in decisions(rows).collect())
            assert got == expected, large
            assert len(meters(rows).collect()) == 7, large  # 2 brokers, their 5 topic meters
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)
