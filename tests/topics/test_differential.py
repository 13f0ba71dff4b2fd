"""The reference engine and the Spark pipeline agree exactly on generated telemetry.

Each hypothesis example is a fleet of independent brokers (each its own scenario, with shared
config); the Spark stage evaluates them all at once (cached) and every output is collected in ONE
job: decisions, meters, the per-interval totals, the dropped-request log. The example count comes
from the "differential" hypothesis profile (tests/conftest.py). Rates are compared for exact
equality: both engines do the same float64 operations in the same order.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

import pytest
from hypothesis import given, settings

from quotaplane.topics.config import TopicQuotaConfig
from quotaplane.topics.engine import intervals as reference
from quotaplane.topics.engine.evaluate import TopicRequest, evaluate
from quotaplane.topics.spark.evaluate import decisions, evaluate_requests, meters
from quotaplane.topics.spark.intervals import dropped_log, topic_intervals
from tests.support.differential import Engines, assert_engines_agree
from tests.topics.strategies import PARTITIONS, fleets, request_frame

DECISION_KEYS = ("ts_ms", "broker_id", "topic", "bytes", "decision", "reason", "total_rate", "topic_rate",
                 "total_threshold", "topic_threshold", "threshold_source")
# The config and the time the final meters are read at (None: the last request, as the stage does).
Run = tuple[TopicQuotaConfig, int | None]


def reference_tables(run: Run, requests: Sequence[TopicRequest]) -> dict[str, list[Any]]:
    config, as_of_ms = run
    expected = evaluate(config, requests, as_of_ms=as_of_ms)
    assert expected.as_of_ms is not None
    return {"decisions": expected.decisions, "meters": expected.meters,
            "intervals": reference.topic_intervals(expected.decisions, config.interval_ms),
            "dropped": reference.dropped_log(expected.decisions, config)}


def spark_tables(spark: Any, run: Run, requests: Sequence[TopicRequest]) -> Generator[dict[str, Any]]:
    config, as_of_ms = run
    as_of_ms = max(r.ts_ms for r in requests) if as_of_ms is None else as_of_ms
    rows = request_frame(spark, requests).transform(evaluate_requests(config, as_of_ms, PARTITIONS)).cache()
    decided = rows.transform(decisions)
    try:
        yield {"decisions": decided, "meters": rows.transform(meters),
               "intervals": decided.transform(topic_intervals(config.interval_ms)),
               "dropped": decided.transform(dropped_log(config.message_max_bytes))}
    finally:
        rows.unpersist()


ENGINES: Engines[Run, Sequence[TopicRequest]] = Engines(reference_tables, spark_tables,
                                                       columns={"decisions": DECISION_KEYS})


@pytest.mark.spark
@settings(parent=settings.get_profile("differential"))
@given(fleets(brokers=40))
def test_reference_and_spark_agree_on_every_output(spark, generated) -> None:
    config, requests = generated
    assert_engines_agree(ENGINES, spark, (config, None), requests)
