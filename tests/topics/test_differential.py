"""The reference engine and the Spark pipeline agree exactly on generated telemetry.

Each hypothesis example is a fleet of independent brokers (each its own scenario, with shared
config); the Spark stage evaluates them all at once (cached) and each output is collected once:
decisions, meters, the per-interval totals, the dropped-request log. Three examples of 40 brokers
by default (`HYPOTHESIS_PROFILE=thorough` runs 50). Rates are compared for
exact equality: both engines do the same float64 operations in the same order.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from quotaplane.topics.engine import intervals as reference
from quotaplane.topics.engine.evaluate import evaluate
from quotaplane.topics.spark.evaluate import decisions, evaluate_requests, meters
from quotaplane.topics.spark.intervals import dropped_log, topic_intervals
from tests.support.differential import assert_rows_equal
from tests.topics.strategies import fleets, request_frame

DECISION_KEYS = ("ts_ms", "broker_id", "topic", "bytes", "decision", "reason", "total_rate", "topic_rate",
                 "total_threshold", "topic_threshold", "threshold_source")


@pytest.mark.spark
@settings(parent=settings.get_profile("differential"))
@given(fleets(brokers=40))
def test_reference_and_spark_agree_on_every_output(spark, generated) -> None:
    config, requests = generated
    expected = evaluate(config, requests)
    assert expected.as_of_ms is not None
    rows = request_frame(spark, requests).transform(evaluate_requests(config, expected.as_of_ms)).cache()
    try:
        assert_rows_equal([d.as_dict() for d in expected.decisions], rows.transform(decisions),
                          DECISION_KEYS, "decisions")
        assert_rows_equal([m.as_dict() for m in expected.meters], rows.transform(meters), label="meters")
        decided = rows.transform(decisions)
        assert_rows_equal(reference.topic_intervals(expected.decisions, config.interval_ms),
                          decided.transform(topic_intervals(config.interval_ms)), label="intervals")
        assert_rows_equal(reference.dropped_log(expected.decisions, config),
                          decided.transform(dropped_log(config.message_max_bytes)), label="dropped")
    finally:
        rows.unpersist()
