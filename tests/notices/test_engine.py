"""The reference engine at its boundaries (docs/notices.md: token bucket, connection-level limits,
notices, receipts and pauses)."""

from __future__ import annotations

from typing import Any

from quotaplane.notices.config import parse_notice_config
from quotaplane.notices.engine.evaluate import Notice, compare, evaluate

A, B, C = (f"persistent://public/default/{t}" for t in "abc")


def ev(ts: int, topic: str = "a", size: int = 0, *, conn: str = "c1", producer: int = 1,
       **extra: Any) -> dict[str, Any]:
    return {"ts_ms": ts, "connection_id": conn, "producer_id": producer, "topic": topic, "bytes": size,
            **extra}


def run(props: dict[str, str], events: list[dict[str, Any]]) -> list[Notice]:
    return evaluate(parse_notice_config(props), events)


TOPIC_A = {"topic.a.publishMaxByteRate": "1000"}


def test_no_traffic_no_notices() -> None:
    assert run(TOPIC_A, []) == []
    assert compare([]) == []


def test_a_topic_is_breached_when_its_bucket_reaches_zero_not_before() -> None:
    assert run(TOPIC_A, [ev(0, size=999)]) == []
    [notice] = run(TOPIC_A, [ev(0, size=1000)])
    assert (notice.reason, notice.topic, notice.pause_for_millis) == ("TopicProduceQuotaExceeded", A, 16)


def test_the_pause_is_the_time_to_the_target_balance_rounded_up_to_ms() -> None:
    # 3 messages/s: the target is 1 message; a balance of 0 needs 1 token = 333,333,333 ns -> 334 ms
    [notice] = run({"topic.a.publishMaxMessageRate": "3"}, [ev(0, messages=3)])
    assert notice.pause_for_millis == 334


def test_a_producer_throttled_gets_no_second_notice_until_its_pause_ends() -> None:
    events = [ev(0, size=1100), ev(50, size=10), ev(115, size=10), ev(116, size=10)]
    notices = run(TOPIC_A, events)
    # 0: balance -100 -> (16 + 100) ms; 116 is the first event at or after the pause's end, its
    # balance -100 + 50 - 10 + 65 - 10 + 1 - 10 = -14 -> (16 + 14) ms
    assert [(n.ts_ms, n.pause_for_millis) for n in notices] == [(0, 116), (116, 30)]


def test_receipts_in_time_late_and_unsupported() -> None:
    props = {**TOPIC_A, "throttleProducerReceiptWaitTimeMillis": "100"}
    cases = [({"supports_throttle": True, "receipt_latency_ms": 100}, "in_time", 0),
             ({"supports_throttle": True, "receipt_latency_ms": 101}, "late", 16),
             ({"supports_throttle": True, "receipt_latency_ms": None}, "late", 16),
             ({"supports_throttle": False, "receipt_latency_ms": 1}, "unsupported", 116),
             ({}, "unsupported", 116)]
    for extra, receipt, paused in cases:
        [notice] = run(props, [ev(0, size=1100, **extra)])
        assert (notice.receipt, notice.connection_paused_ms, notice.connection_paused_ms_without_notices) == (
            receipt, paused, 116), extra


def test_a_late_receipt_longer_than_the_pause_pauses_nothing() -> None:
    props = {**TOPIC_A, "throttleProducerReceiptWaitTimeMillis": "500"}
    [notice] = run(props, [ev(0, size=1100, supports_throttle=True)])
    assert (notice.receipt, notice.connection_paused_ms) == ("late", 0)


def test_stalled_topics_are_the_other_topics_on_the_connection_inside_the_pause() -> None:
    events = [ev(0, size=1100, supports_throttle=True, receipt_latency_ms=5),
              ev(0, "b", producer=2), ev(115, "c", producer=3), ev(116, "d", producer=4),
              ev(50, "e", conn="c2"), ev(60, "a", producer=1)]
    [notice] = run(TOPIC_A, events)
    assert (notice.stalled_topics, notice.stalled_topics_without_notices) == (0, 2)  # b and c, not d, e, a


def test_rest_of_second_pause_rule() -> None:
    [notice] = run({**TOPIC_A, "quotaplane.notices.pauseRule": "rest-of-second"}, [ev(1300, size=1100)])
    assert (notice.pause_for_millis, notice.connection_paused_ms_without_notices) == (700, 700)


def test_partitions_share_the_policy_but_not_the_bucket() -> None:
    events = [ev(0, "a-partition-0", size=600), ev(0, "a-partition-1", size=600, producer=2)]
    assert run(TOPIC_A, events) == []


def test_a_resource_group_bucket_is_shared_by_its_topics() -> None:
    props = {"resourcegroup.g.publishRateInBytes": "1000", "resourcegroup.g.topics": "a,b"}
    notices = run(props, [ev(0, "a", 600), ev(0, "b", 600, producer=2), ev(0, "c", 5000, producer=3)])
    assert [(n.topic, n.reason) for n in notices] == [(B, "ResourceGroupProduceQuotaExceeded")]


def test_a_broker_rate_breach_pauses_the_connection_and_sends_a_zero_pause() -> None:
    props = {"brokerPublisherThrottlingMaxByteRate": "1000"}
    first, second = run(props, [ev(0, size=1100, supports_throttle=True, receipt_latency_ms=1),
                                ev(10, "b", producer=2)])
    assert (first.reason, first.pause_for_millis, first.receipt, first.connection_paused_ms,
            first.stalled_topics) == ("BrokerProduceQuotaExceeded", 0, "in_time", 116, 1)
    # the broker's bucket is still empty at 10 (-90): another producer is throttled too
    assert (second.producer_id, second.connection_paused_ms) == (2, 106)


def test_pending_requests_pause_at_the_maximum_until_half_have_completed() -> None:
    props = {"maxPendingPublishRequestsPerConnection": "4"}
    events = [ev(t, publish_latency_ms=100) for t in (0, 10, 20)]
    assert run(props, events) == []
    more = [ev(30, "b", producer=2, publish_latency_ms=100), ev(105, "c", producer=3)]
    [notice] = run(props, [*events, *more])
    # pending at 30: 4 (completions 100, 110, 120, 130); resume at 4 // 2 = 2 left: the 2nd completion
    assert (notice.ts_ms, notice.reason, notice.topic, notice.pause_for_millis, notice.connection_paused_ms,
            notice.connection_paused_ms_without_notices, notice.stalled_topics) == (
        30, "ConnectionPendingMessagesBreach", B, 0, 80, 80, 1)


def test_a_completion_at_the_read_time_is_no_longer_pending() -> None:
    props = {"maxPendingPublishRequestsPerConnection": "2"}
    assert run(props, [ev(0, publish_latency_ms=10), ev(10, publish_latency_ms=10)]) == []
    assert len(run(props, [ev(0, publish_latency_ms=10), ev(9, publish_latency_ms=10)])) == 1


def test_the_publish_buffer_is_breached_strictly_above_its_share_per_thread() -> None:
    mib = 1024 * 1024
    props = {"maxMessagePublishBufferSizeInMB": "2", "numIOThreads": "2"}
    assert run(props, [ev(0, size=mib, publish_latency_ms=10)]) == []
    events = [ev(0, size=mib + 1, publish_latency_ms=10), ev(5, "b", conn="c2"), ev(5, "c", conn="c3")]
    [notice] = run(props, events)
    # c1 and c3 share IO thread 0 (round robin in order of first appearance); c2 is on thread 1
    assert (notice.reason, notice.connection_paused_ms, notice.stalled_topics) == (
        "MessageBufferSizeBreach", 10, 1)


def test_brokers_are_evaluated_apart() -> None:
    notices = run(TOPIC_A, [ev(0, size=600, broker="x"), ev(0, size=600, broker="y")])
    assert notices == []


def test_comparison_sums_per_broker_topic_and_reason() -> None:
    events = [ev(0, size=1100, supports_throttle=True, receipt_latency_ms=1), ev(1, "b", producer=2),
              ev(200, size=1100)]
    [row] = compare(run(TOPIC_A, events))
    # 0: -100, 116 ms, in time; 200: -100 + 200 - 1100 = -1000, 1016 ms, unsupported
    assert row == {"broker": "", "topic": A, "reason": "TopicProduceQuotaExceeded", "notices": 2,
                   "in_time": 1, "late": 0, "unsupported": 1, "pause_for_millis_total": 1132,
                   "connection_paused_ms": 1016, "connection_paused_ms_without_notices": 1132,
                   "stalled_topics": 0, "stalled_topics_without_notices": 1}
