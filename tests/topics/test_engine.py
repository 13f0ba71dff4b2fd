"""The reference engine at every boundary of the spec's rules."""

from __future__ import annotations

import pytest

from quotaplane.topics.config import parse_topics_config
from quotaplane.topics.engine.decision import judge
from quotaplane.topics.engine.evaluate import TopicRequest, evaluate
from quotaplane.topics.engine.meter import M1_ALPHA

TOTAL = "total.bytes.in.per.sec.threshold"


def config(total: int, max_bytes: int = 1_000_000, **thresholds: int | str) -> object:
    props = {TOTAL: str(total), "message.max.bytes": str(max_bytes)}
    for key, value in thresholds.items():
        topic, _, ts = key.partition("_at_")
        props[f"topic.{topic}.bytes.in.per.sec.threshold" + (f"@{ts}" if ts else "")] = str(value)
    return parse_topics_config(props)


def R(ts: int, topic: str, size: int, broker: int = 1) -> TopicRequest:
    return TopicRequest(ts, broker, topic, size)


# --- the drop rule -----------------------------------------------------------------------------------


def test_judge_is_strict_on_both_rates_and_needs_both() -> None:
    assert judge(10, 10, 1000.0, 1000, 501.0, 500) == ("accepted", None)  # total rate == threshold
    assert judge(10, 10, 1000.5, 1000, 500.0, 500) == ("accepted", None)  # topic rate == threshold
    assert judge(10, 10, 1000.5, 1000, 500.5, 500) == ("throttled", "bytes_in_quota_exceeded")
    assert judge(10, 10, 0.0, 1000, 9e9, 500) == ("accepted", None)
    assert judge(10, 10, 9e9, 1000, 0.0, 500) == ("accepted", None)


def test_judge_size_boundary_is_strictly_above_message_max_bytes() -> None:
    assert judge(5000, 5000, 0.0, 0, 0.0, 0) == ("accepted", None)
    assert judge(5001, 5000, 0.0, 0, 0.0, 0) == ("error", "message_too_large")
    assert judge(5001, 5000, 9e9, 0, 9e9, 0) == ("error", "message_too_large")  # error before quota


def test_rate_exactly_at_the_total_is_not_over() -> None:
    # 5000 bytes in the first 5 s -> the first tick sets 5000 / 5e9 * 1e9 == 1000.0 bytes/s
    cfg = config(1000, a=0)
    ev = evaluate(cfg, [R(0, "a", 5000), R(5000, "a", 1)])
    assert ev.decisions[1].total_rate == 1000.0 and ev.decisions[1].topic_rate == 1000.0
    assert ev.decisions[1].decision == "accepted"
    ev = evaluate(config(999, a=0), [R(0, "a", 5000), R(5000, "a", 1)])
    assert ev.decisions[1].decision == "throttled"


def test_topic_rate_exactly_at_its_threshold_is_not_over() -> None:
    # broker 2000.0 > 1000; b's rate 1000.0 == its threshold 1000; c's rate 1000.0 > its share 0
    ev = evaluate(config(1000, b=1000), [R(0, "b", 5000), R(0, "c", 5000), R(5000, "b", 1), R(5000, "c", 1)])
    assert [(d.total_rate, d.topic_rate, d.topic_threshold, d.decision) for d in ev.decisions[2:]] == [
        (2000.0, 1000.0, 1000, "accepted"), (2000.0, 1000.0, 0, "throttled")]
    ev = evaluate(config(1000, b=999), [R(0, "b", 5000), R(0, "c", 5000), R(5000, "b", 1)])
    assert ev.decisions[2].decision == "throttled"


def test_the_tick_at_a_request_time_applies_before_it_and_not_one_ms_earlier() -> None:
    cfg = config(0, a=0)
    ev = evaluate(cfg, [R(0, "a", 10), R(4999, "a", 10), R(5000, "a", 10)])
    assert [d.decision for d in ev.decisions] == ["accepted", "accepted", "throttled"]
    assert [d.total_rate for d in ev.decisions] == [0.0, 0.0, 20 / 5e9 * 1e9]


def test_topic_meters_tick_at_their_own_creation_phase() -> None:
    cfg = config(0, a=0, b=0)
    ev = evaluate(cfg, [R(0, "a", 10), R(3000, "b", 10), R(5000, "b", 10), R(7999, "b", 10),
                        R(8000, "b", 10)])
    rates = [(d.total_rate, d.topic_rate, d.decision) for d in ev.decisions]
    broker_rate = 20 / 5e9 * 1e9  # a at 0 and b at 3000, ticked at 5000
    assert rates[2] == (broker_rate, 0.0, "accepted")  # b's first tick is at 8000
    assert rates[3] == (broker_rate, 0.0, "accepted")
    assert rates[4] == (broker_rate, 30 / 5e9 * 1e9, "throttled")  # b accepted 10 at 3000, 5000 and 7999


def test_throttled_bytes_are_not_bytes_in() -> None:
    cfg = config(0, a=0)
    ev = evaluate(cfg, [R(0, "a", 5000), R(5000, "a", 7000), R(10_000, "a", 1)])
    assert [d.decision for d in ev.decisions] == ["accepted", "throttled", "throttled"]
    expected = (1000.0 / 1e9 + M1_ALPHA * (0.0 - 1000.0 / 1e9)) * 1e9  # the second tick saw 0 bytes in
    assert ev.decisions[2].total_rate == pytest.approx(expected, rel=1e-15)
    [broker, topic] = ev.meters
    counts = (broker.bytes_in_count, broker.throttled_bytes_in_count, broker.error_bytes_in_count)
    assert counts == (5000, 7001, 0)
    assert (topic.bytes_in_count, topic.throttled_bytes_in_count) == (5000, 7001)
    # the throttled meter's first tick (5000) saw nothing, its second (10 000) the 7000 bytes
    assert broker.throttled_bytes_in_rate == (0.0 + M1_ALPHA * (7000 / 5e9 - 0.0)) * 1e9


def test_error_bytes_are_not_bytes_in_and_do_not_raise_the_rate() -> None:
    cfg = config(0, max_bytes=100, a=0)
    ev = evaluate(cfg, [R(0, "a", 101), R(0, "a", 100), R(5000, "a", 1)])
    assert [d.decision for d in ev.decisions] == ["error", "accepted", "throttled"]
    assert ev.decisions[2].total_rate == 100 / 5e9 * 1e9
    [broker, topic] = ev.meters
    counts = (broker.bytes_in_count, broker.throttled_bytes_in_count, broker.error_bytes_in_count)
    assert counts == (100, 1, 101)
    assert topic.error_bytes_in_rate == 101 / 5e9 * 1e9  # read at 5000, after its first tick
    assert topic.bytes_in_rate == 100 / 5e9 * 1e9


def test_requests_of_the_same_millisecond_are_judged_alike_in_any_order() -> None:
    cfg = config(1000)
    requests = [R(0, "a", 4000), R(0, "b", 3000), R(5000, "b", 10), R(5000, "c", 10), R(5000, "a", 10)]
    forward = evaluate(cfg, requests)
    backward = evaluate(cfg, requests[::-1])
    assert [d.as_dict() for d in forward.decisions] == [d.as_dict() for d in backward.decisions][::-1]
    # c first appears at 5000: the share at 5000 is 1000 // 3 for every request at 5000
    assert [d.topic_threshold for d in forward.decisions] == [500, 500, 333, 333, 333]


def test_decisions_come_back_in_input_order() -> None:
    cfg = config(1000)
    ev = evaluate(cfg, [R(9000, "a", 1), R(0, "b", 2), R(4000, "a", 3)])
    assert [(d.ts_ms, d.bytes) for d in ev.decisions] == [(9000, 1), (0, 2), (4000, 3)]


def test_meters_are_created_by_the_first_request_whatever_its_decision() -> None:
    cfg = config(0, max_bytes=10, a=0)
    ev = evaluate(cfg, [R(1000, "a", 11), R(3000, "b", 5)], as_of_ms=3000)
    assert [(m.topic, m.created_ms) for m in ev.meters] == [(None, 1000), ("a", 1000), ("b", 3000)]


def test_brokers_are_independent() -> None:
    cfg = config(1000)
    ev = evaluate(cfg, [R(0, "a", 9000, broker=1), R(0, "b", 9000, broker=2), R(0, "c", 1, broker=2),
                        R(5000, "a", 1, broker=1)])
    assert [d.topic_threshold for d in ev.decisions] == [1000, 500, 500, 1000]
    assert ev.decisions[3].total_rate == 9000 / 5e9 * 1e9


def test_as_of_must_not_be_before_the_last_request() -> None:
    with pytest.raises(ValueError, match="before the last request"):
        evaluate(config(1), [R(10, "a", 1)], as_of_ms=9)


def test_no_requests() -> None:
    ev = evaluate(config(1), [])
    assert (ev.decisions, ev.meters, ev.as_of_ms) == ([], [], None)


def test_final_meters_are_read_at_as_of() -> None:
    cfg = config(1000, a=100)
    ev = evaluate(cfg, [R(0, "a", 5000), R(1000, "b", 5000)], as_of_ms=6000)
    broker, a, b = ev.meters
    assert broker.bytes_in_rate == 10_000 / 5e9 * 1e9
    assert (a.bytes_in_rate, a.threshold, a.threshold_source) == (1000.0, 100, "explicit")
    assert (b.bytes_in_rate, b.threshold, b.threshold_source) == (1000.0, 900, "default")
    assert (broker.threshold, broker.threshold_source) == (1000, "total")
