"""The reference engine and the Spark pipeline agree exactly on generated producer traffic.

Each hypothesis example is a config and several independent brokers' traffic; the Spark path of
the stage (one `applyInPandas` group per broker around the numpy kernel, whose sums of its notices
the action that computes them observes) gives `notice_decisions`, and from those sums
`notice_comparison` and the report's timeline with its bucket, compared with the reference's
through the one harness. The example count comes from the "differential" hypothesis profile
(tests/conftest.py).
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from pyspark.sql import functions as F

from quotaplane.core.spark.readers import REASON, CountedInUse, ReadResult
from quotaplane.notices.config import NoticeConfig, parse_notice_config
from quotaplane.notices.engine.evaluate import COMPARISON_COLUMNS, compare, evaluate
from quotaplane.notices.records import PRODUCER_TRAFFIC
from quotaplane.notices.report import report_data_from_notices
from quotaplane.notices.spark.evaluate import (
    COMPARISON_SCHEMA,
    NOTICE_SCHEMA,
    evaluate_brokers,
    observe_aggregates,
    observed_aggregates,
)
from tests.notices.strategies import traffic
from tests.support.differential import Engines, assert_engines_agree, records_frame

Events = Sequence[dict[str, Any]]


def reference_tables(config: NoticeConfig, events: Events) -> dict[str, list[Any]]:
    notices = evaluate(config, events)
    report = report_data_from_notices(notices)
    return {"notice_decisions": notices, "notice_comparison": compare(notices),
            "notice_timeline": _timeline(report.timeline.to_dict("records"), report.bucket_ms)}


def spark_tables(spark: Any, config: NoticeConfig, events: Events) -> Generator[dict[str, Any]]:
    notices, observation, counted = _observed_notices(spark, config, events)
    notices = notices.cache()
    try:
        notices.count()  # the action that observes the brokers' sums and counts the traffic
        counts = counted.counts(None)
        assert (counts.read, counts.used, counts.quarantined) == (len(events), len(events), 0)
        comparison, timeline, bucket_ms = observed_aggregates(observation)
        yield {"notice_decisions": notices, "notice_comparison": comparison,
               "notice_timeline": _timeline(timeline, bucket_ms)}
    finally:
        notices.unpersist()


def _observed_notices(spark: Any, config: NoticeConfig, events: Events) -> tuple[Any, Any, CountedInUse]:
    """The notices as the stage writes them, the observation of the brokers' sums and the counts
    of the traffic (every generated row passes the reader's checks: its REASON is null)."""
    traffic = records_frame(spark, events, PRODUCER_TRAFFIC).withColumn(REASON, F.lit(None).cast("string"))
    counted = CountedInUse(ReadResult(PRODUCER_TRAFFIC, "generated", traffic))
    return (*observe_aggregates(traffic.transform(evaluate_brokers(config, counted))), counted)


def _timeline(rows: Sequence[dict[str, Any]], bucket_ms: int) -> list[dict[str, Any]]:
    return [{**r, "bucket_ms": bucket_ms} for r in rows]


ENGINES: Engines[NoticeConfig, Events] = Engines(reference_tables, spark_tables)


@pytest.mark.spark
@settings(parent=settings.get_profile("differential"))
@given(traffic(brokers=6))
def test_reference_and_spark_agree_on_every_output(spark, generated) -> None:
    config, events = generated
    assert_engines_agree(ENGINES, spark, config, events)


@pytest.mark.spark
def test_spark_on_no_traffic_and_the_declared_schemas(spark) -> None:
    config = parse_notice_config({"topic.a.publishMaxByteRate": "1000"})
    assert_engines_agree(ENGINES, spark, config, [])
    notices, _, _ = _observed_notices(spark, config, [])
    assert notices.schema == NOTICE_SCHEMA
    assert tuple(COMPARISON_SCHEMA.fieldNames()) == COMPARISON_COLUMNS


@pytest.mark.spark
def test_a_pause_beyond_a_long_fails_the_stage(spark) -> None:
    # a balance of -(2^63 - 2) bytes at 1 B/s: a pause of about 9.2e21 ms
    config = parse_notice_config({"topic.a.publishMaxByteRate": "1"})
    events = [{"ts_ms": 0, "connection_id": "c", "producer_id": 0, "topic": "a", "bytes": 2**63 - 1}]
    assert evaluate(config, events)[0].pause_for_millis > 2**63 - 1
    notices, _, _ = _observed_notices(spark, config, events)
    with pytest.raises(Exception, match="pause_for_millis of a notice of broker '' is beyond a LONG"):
        notices.collect()
