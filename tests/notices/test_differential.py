"""The reference engine and the Spark pipeline agree exactly on generated producer traffic.

Each hypothesis example is a config and several independent brokers' traffic; the Spark transforms
(limits as column expressions, one `applyInPandas` group per broker around the numpy kernel, the
comparison aggregate) give `notice_decisions` and `notice_comparison`, collected in ONE job and
compared with the reference's through the one harness. The example count comes from the
"differential" hypothesis profile (tests/conftest.py).
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

import pytest
from hypothesis import given, settings

from quotaplane.notices.config import NoticeConfig, parse_notice_config
from quotaplane.notices.engine.evaluate import COMPARISON_COLUMNS, compare, evaluate
from quotaplane.notices.engine.kernel import LIMIT_COLUMNS, limits_of
from quotaplane.notices.records import PRODUCER_TRAFFIC, normalise_topic
from quotaplane.notices.spark.evaluate import (
    COMPARISON_SCHEMA,
    NOTICE_SCHEMA,
    comparison,
    evaluate_notices,
    with_limits,
)
from tests.notices.strategies import TOPICS, traffic
from tests.support.differential import Engines, assert_engines_agree, records_frame

Events = Sequence[dict[str, Any]]


def reference_tables(config: NoticeConfig, events: Events) -> dict[str, list[Any]]:
    notices = evaluate(config, events)
    return {"notice_decisions": notices, "notice_comparison": compare(notices)}


def spark_tables(spark: Any, config: NoticeConfig, events: Events) -> Generator[dict[str, Any]]:
    notices = records_frame(spark, events, PRODUCER_TRAFFIC).transform(evaluate_notices(config)).cache()
    try:
        yield {"notice_decisions": notices, "notice_comparison": comparison(notices)}
    finally:
        notices.unpersist()


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
    notices = records_frame(spark, [], PRODUCER_TRAFFIC).transform(evaluate_notices(config))
    assert notices.schema == NOTICE_SCHEMA
    assert comparison(notices).schema == COMPARISON_SCHEMA
    assert tuple(COMPARISON_SCHEMA.fieldNames()) == COMPARISON_COLUMNS


@pytest.mark.spark
def test_a_pause_beyond_a_long_fails_the_stage(spark) -> None:
    # a balance of -(2^63 - 2) bytes at 1 B/s: a pause of about 9.2e21 ms
    config = parse_notice_config({"topic.a.publishMaxByteRate": "1"})
    events = [{"ts_ms": 0, "connection_id": "c", "producer_id": 0, "topic": "a", "bytes": 2**63 - 1}]
    assert evaluate(config, events)[0].pause_for_millis > 2**63 - 1
    notices = records_frame(spark, events, PRODUCER_TRAFFIC).transform(evaluate_notices(config))
    with pytest.raises(Exception, match="pause_for_millis of a notice of broker '' is beyond a LONG"):
        notices.collect()


@pytest.mark.spark
def test_the_limits_as_columns_are_the_configs(spark) -> None:
    # a topic policy with both rates 0 is no limiter (and hides its namespace's); a group without a
    # rate is none; partitions take their topic's policy and group
    props = {"topic.a.publishMaxByteRate": "10", "topic.public/default/b.publishMaxMessageRate": "0",
             "namespace.public/default.publishMaxMessageRate": "5",
             "namespace.t1/ns1.publishMaxByteRate": "7",
             "resourcegroup.g.topics": "b,t1/ns1/d", "resourcegroup.g.publishRateInMsgs": "3",
             "resourcegroup.h.topics": "c"}
    config = parse_notice_config(props)
    events = [{"ts_ms": 0, "connection_id": "c", "producer_id": 0, "topic": t, "bytes": 0} for t in TOPICS]
    rows = records_frame(spark, events, PRODUCER_TRAFFIC).transform(with_limits(config)).collect()
    got = sorted(tuple(r[c] for c in ("topic", *LIMIT_COLUMNS)) for r in rows)
    resolved = limits_of(config, list(TOPICS))
    expected = sorted(zip([normalise_topic(t) for t in TOPICS], *(resolved[c] for c in LIMIT_COLUMNS),
                          strict=True))
    assert got == expected
    assert {r["resource_group"] for r in rows} == {None, "g"}
