"""The reference engine and the Spark pipeline agree exactly on generated telemetry.

Each hypothesis example is a fleet of independent brokers (each its own scenario, with shared
config); the Spark stage evaluates them all at once (cached) and each output is collected once:
decisions, meters, the per-interval totals, the dropped-request log. Three examples of 40 brokers
by default (`HYPOTHESIS_PROFILE=thorough` runs 50). Rates are compared for
exact equality: both engines do the same float64 operations in the same order.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from quotaplane.topics.engine import intervals as reference
from quotaplane.topics.engine.evaluate import evaluate
from quotaplane.topics.spark.evaluate import decisions, evaluate_requests, meters
from quotaplane.topics.spark.intervals import dropped_log, topic_intervals
from tests.topics.compare import decision_rows, meter_rows, request_frame, sorted_rows
from tests.topics.strategies import fleets


@pytest.mark.spark
@settings(max_examples=max(3, settings().max_examples // 8), deadline=None,
          suppress_health_check=list(HealthCheck))
@given(fleets(brokers=40))
def test_reference_and_spark_agree_on_every_output(spark, generated) -> None:
    config, requests = generated
    expected = evaluate(config, requests)
    assert expected.as_of_ms is not None
    rows = request_frame(spark, requests).transform(evaluate_requests(config, expected.as_of_ms)).cache()
    try:
        assert sorted_rows(rows.transform(decisions).collect()) == decision_rows(expected)
        assert sorted_rows(rows.transform(meters).collect()) == meter_rows(expected)
        decided = rows.transform(decisions)
        intervals = decided.transform(topic_intervals(config.interval_ms)).collect()
        assert sorted_rows(intervals) == sorted_rows(
            tuple(r.values()) for r in reference.topic_intervals(expected.decisions, config.interval_ms))
        dropped = decided.transform(dropped_log(config.message_max_bytes)).collect()
        assert sorted_rows(dropped) == sorted_rows(
            tuple(r.values()) for r in reference.dropped_log(expected.decisions, config))
    finally:
        rows.unpersist()
