"""The numpy kernel gives exactly the reference engine's notices (docs/notices.md), broker by broker:
hand cases at every boundary of the rules, then generated traffic."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings

from quotaplane.notices.config import NoticeConfig, parse_notice_config
from quotaplane.notices.engine.bucket import TokenBucket, new_tokens
from quotaplane.notices.engine.evaluate import NOTICE_COLUMNS, Notice, evaluate
from quotaplane.notices.engine.kernel import (
    LIMIT_COLUMNS,
    NOTICE_RECORD,
    _Carries,
    _event_order,
    _fits,
    evaluate_broker,
    limits_of,
)
from tests.notices.strategies import traffic, traffic_frame

LONG = 2**63 - 1
A, B = "persistent://public/default/a", "persistent://public/default/b"


def ev(ts: int, topic: str = "a", size: int = 0, *, conn: str = "c1", producer: int = 1,
       **extra: Any) -> dict[str, Any]:
    return {"ts_ms": ts, "connection_id": conn, "producer_id": producer, "topic": topic, "bytes": size,
            **extra}


def kernel_rows(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The kernel's rows as Python values (ints, strings)."""
    assert tuple(frame.columns) == NOTICE_COLUMNS
    columns = [frame[c].tolist() for c in NOTICE_COLUMNS]
    return [dict(zip(NOTICE_COLUMNS, values, strict=True)) for values in zip(*columns, strict=True)]


def kernel_agrees(config: NoticeConfig, events: Sequence[Mapping[str, Any]]) -> list[Notice]:
    """Each broker's events through the kernel equal the reference's notices of that broker, in
    the same order; returns the reference's notices."""
    expected = evaluate(config, events)
    brokers = sorted({e.get("broker") or "" for e in events})
    got: list[dict[str, Any]] = []
    for broker in brokers:
        got += kernel_rows(evaluate_broker(config, traffic_frame(
            [e for e in events if (e.get("broker") or "") == broker])))
    assert got == [n.as_dict() for n in expected]
    return expected


def run(props: Mapping[str, str], events: Sequence[Mapping[str, Any]]) -> list[Notice]:
    return kernel_agrees(parse_notice_config(props), events)


def summary(notices: Sequence[Notice]) -> list[tuple[Any, ...]]:
    return [(n.ts_ms, n.reason, n.pause_for_millis, n.receipt, n.connection_paused_ms) for n in notices]


TOPIC_A = {"topic.a.publishMaxByteRate": "1000"}


def test_the_output_record_names_the_reference_columns() -> None:
    assert tuple(NOTICE_RECORD.field_names) == NOTICE_COLUMNS


def test_no_events_no_notices_with_the_output_columns() -> None:
    frame = evaluate_broker(parse_notice_config(TOPIC_A), traffic_frame([]))
    assert list(frame.columns) == list(NOTICE_COLUMNS) and frame.empty
    assert run(TOPIC_A, []) == []


def test_one_event() -> None:
    assert run(TOPIC_A, [ev(5, size=10)]) == []
    assert summary(run(TOPIC_A, [ev(5, size=5000)])) == [(5, "TopicProduceQuotaExceeded", 4016, "unsupported",
                                                          4016)]


def test_a_bucket_holding_one_token_is_not_breached_zero_is() -> None:
    assert run(TOPIC_A, [ev(0, size=999)]) == []
    assert summary(run(TOPIC_A, [ev(0, size=1000)])) == [
        (0, "TopicProduceQuotaExceeded", 16, "unsupported", 16)]
    # messages: 3/s, a batch of 2 leaves 1 token, of 3 none
    assert run({"topic.a.publishMaxMessageRate": "3"}, [ev(0, messages=2)]) == []
    assert len(run({"topic.a.publishMaxMessageRate": "3"}, [ev(0, messages=3)])) == 1


def test_tokens_made_between_events_and_the_capacity() -> None:
    # 1000 B/s: 1 ms makes one token; the balance never exceeds the capacity (1000)
    assert run(TOPIC_A, [ev(0, size=999), ev(1, size=1)]) == []
    assert len(run(TOPIC_A, [ev(0, size=999), ev(1, size=2)])) == 1
    assert run(TOPIC_A, [ev(0, size=0), ev(5000, size=999)]) == []
    assert len(run(TOPIC_A, [ev(0, size=0), ev(5000, size=1000)])) == 1


@pytest.mark.parametrize(("rate", "pause"), [
    (1000, 16),  # the 16 ms target: 16 tokens at 1000/s, exactly 16 ms
    (62, 17),  # 16 ms of 62/s is under one token: the target is 1 token, 16.129 ms -> 17
    (63, 16),  # 16 ms of 63/s is 1.008 tokens -> 1 token, 15.87 ms -> 16
    (125, 16),  # 2 tokens, exactly 16 ms
    (3, 334),  # 1 token = 333,333,333 ns, rounded up
    (7, 143),
])
def test_the_pause_is_the_time_to_the_target_rounded_up(rate: int, pause: int) -> None:
    notices = run({"topic.a.publishMaxByteRate": str(rate)}, [ev(0, size=rate)])
    assert [n.pause_for_millis for n in notices] == [pause]


def test_a_deeper_balance_pauses_longer() -> None:
    # 1000 B/s, balance -100: (16 + 100) tokens = 116 ms
    assert [n.pause_for_millis for n in run(TOPIC_A, [ev(0, size=1100)])] == [116]


def test_a_throttled_producer_gets_no_notice_until_its_pause_ends() -> None:
    events = [ev(0, size=1100), ev(50, size=10), ev(115, size=10), ev(116, size=10),
              ev(60, size=10, producer=2)]
    assert [(n.ts_ms, n.producer_id) for n in run(TOPIC_A, events)] == [(0, 1), (60, 2), (116, 1)]


@pytest.mark.parametrize(("extra", "receipt", "paused"), [
    ({"supports_throttle": True, "receipt_latency_ms": 100}, "in_time", 0),  # latency == wait
    ({"supports_throttle": True, "receipt_latency_ms": 101}, "late", 16),  # wait + 1
    ({"supports_throttle": True, "receipt_latency_ms": 0}, "in_time", 0),
    ({"supports_throttle": True}, "late", 16),  # no receipt
    ({"supports_throttle": False, "receipt_latency_ms": 1}, "unsupported", 116),
    ({}, "unsupported", 116),
])
def test_receipts_at_the_wait(extra: dict[str, Any], receipt: str, paused: int) -> None:
    props = {**TOPIC_A, "throttleProducerReceiptWaitTimeMillis": "100"}
    [notice] = run(props, [ev(0, size=1100, **extra), ev(99, "b", producer=2), ev(100, "c", producer=3)])
    assert (notice.receipt, notice.connection_paused_ms, notice.connection_paused_ms_without_notices) == (
        receipt, paused, 116)
    assert notice.stalled_topics_without_notices == 2
    assert notice.stalled_topics == {"in_time": 0, "late": 1, "unsupported": 2}[receipt]


def test_rest_of_second_pause_rule() -> None:
    props = {**TOPIC_A, "quotaplane.notices.pauseRule": "rest-of-second"}
    assert [n.pause_for_millis for n in run(props, [ev(1300, size=1100)])] == [700]
    assert [n.pause_for_millis for n in run(props, [ev(1999, size=1100)])] == [1]
    assert [n.pause_for_millis for n in run(props, [ev(2000, size=1100)])] == [1000]
    # the broker limiter keeps the token-bucket pause
    props = {"brokerPublisherThrottlingMaxByteRate": "1000", "quotaplane.notices.pauseRule": "rest-of-second"}
    assert [n.connection_paused_ms for n in run(props, [ev(1300, size=1100)])] == [116]


def test_topic_group_and_broker_limiters_in_order() -> None:
    props = {**TOPIC_A, "resourcegroup.g.publishRateInBytes": "500", "resourcegroup.g.topics": "a,b",
             "brokerPublisherThrottlingMaxMessageRate": "1"}
    notices = run(props, [ev(0, size=1000), ev(1, "b-partition-3", size=1, conn="c2")])
    # the group is shared by a and b's partitions; the broker's 1 message/s: a balance of 0 pauses
    # for the target (1 token, 1 s), -1 for 2 s; a connection-level notice carries no pause
    assert [(n.ts_ms, n.reason, n.pause_for_millis, n.connection_paused_ms) for n in notices] == [
        (0, "TopicProduceQuotaExceeded", 16, 16), (0, "ResourceGroupProduceQuotaExceeded", 1016, 1016),
        (0, "BrokerProduceQuotaExceeded", 0, 1000), (1, "ResourceGroupProduceQuotaExceeded", 1018, 1018),
        (1, "BrokerProduceQuotaExceeded", 0, 2000)]


def test_pending_requests_at_the_maximum() -> None:
    props = {"maxPendingPublishRequestsPerConnection": "3"}
    two = [ev(0, publish_latency_ms=10), ev(1, publish_latency_ms=30)]
    assert run(props, two) == []  # count 2 < 3
    notices = run(props, [*two, ev(2, publish_latency_ms=20)])  # count 3 == max: pause until 1 is left
    assert summary(notices) == [(2, "ConnectionPendingMessagesBreach", 0, "unsupported", 20)]
    # a completion at the read's time comes first: the request of 0 is done at 10
    assert run(props, [*two, ev(10, publish_latency_ms=5)]) == []
    # latency 0 still counts the request itself
    assert len(run({"maxPendingPublishRequestsPerConnection": "1"}, [ev(0)])) == 1
    assert run({"maxPendingPublishRequestsPerConnection": "0"}, [ev(0)] * 5) == []


def test_pending_requests_pause_is_not_renewed_while_paused() -> None:
    props = {"maxPendingPublishRequestsPerConnection": "2"}
    events = [ev(0, publish_latency_ms=100), ev(1, publish_latency_ms=100), ev(50, publish_latency_ms=100),
              ev(100, publish_latency_ms=100), ev(101, publish_latency_ms=1)]
    # paused [1, 100); at 100 the requests of 0 and 1 are done first: 50's and 100's are pending,
    # a new breach until 50's completes
    assert [(n.ts_ms, n.connection_paused_ms) for n in run(props, events)] == [(1, 99), (100, 50)]


@pytest.mark.parametrize(("size", "breached"), [(1048576, False), (1048577, True)])
def test_the_buffer_is_breached_above_its_maximum(size: int, breached: bool) -> None:
    props = {"maxMessagePublishBufferSizeInMB": "1", "numIOThreads": "1"}
    assert len(run(props, [ev(0, size=size, publish_latency_ms=5)])) == int(breached)


def test_the_buffer_pauses_every_connection_of_the_thread() -> None:
    # 2 threads of 524,288 bytes (resumed at 262,144): c1 and c3 share thread 0, c2 is on thread 1
    props = {"maxMessagePublishBufferSizeInMB": "1", "numIOThreads": "2"}
    events = [ev(0, size=300_000, publish_latency_ms=50), ev(1, size=1, conn="c2", publish_latency_ms=50),
              ev(2, "b", size=200_000, conn="c3", publish_latency_ms=10),
              ev(3, "c", size=100_000, conn="c3", publish_latency_ms=70),
              ev(20, "d", conn="c3"), ev(30, "e", conn="c2"), ev(40, "f")]
    [notice] = run(props, events)
    # at 3 thread 0 holds 600,000 > 524,288; completions at 12 (200,000) and 50 (300,000) leave
    # 100,000: paused [3, 50), stalling d (c3) and f (c1), not e (c2, thread 1)
    assert (notice.ts_ms, notice.reason, notice.connection_paused_ms, notice.stalled_topics) == (
        3, "MessageBufferSizeBreach", 47, 2)


def test_the_limits_of_a_topic() -> None:
    # a topic policy with both rates 0 is no limiter (and hides its namespace's); a group without a
    # rate is none; partitions take their topic's policy and group; any spelling of a name is its
    # full name
    config = parse_notice_config({
        "topic.a.publishMaxByteRate": "10", "topic.public/default/b.publishMaxMessageRate": "0",
        "namespace.public/default.publishMaxMessageRate": "5", "namespace.t1/ns1.publishMaxByteRate": "7",
        "resourcegroup.g.topics": "b,t1/ns1/d", "resourcegroup.g.publishRateInMsgs": "3",
        "resourcegroup.h.topics": "c"})
    topics = ["a", "persistent://public/default/a", "b", "b-partition-1", "c", "t1/ns1/d",
              "non-persistent://t1/ns1/e"]
    limits = limits_of(config, topics)
    assert list(limits) == list(LIMIT_COLUMNS)
    assert list(zip(*limits.values(), strict=True)) == [
        (10, 0, None, 0, 0), (10, 0, None, 0, 0),  # a: its own policy
        (0, 0, "g", 0, 3), (0, 0, "g", 0, 3),  # b: a policy of 0s, no limiter; in group g
        (0, 5, None, 0, 0),  # c: its namespace's; group h has no rate
        (7, 0, "g", 0, 3), (7, 0, None, 0, 0)]
    # an event's limits are its topic's
    frame = traffic_frame([ev(0, size=1000), ev(0, "b", size=1000)])
    assert len(evaluate_broker(parse_notice_config(TOPIC_A), frame)) == 1


def test_the_forced_update_of_the_throttling_duration() -> None:
    # 10^9 + 1 B/s: 1 ms makes 1,000,000 tokens and carries 1 ns, which the duration's forced update
    # turns into a token: the balance is 1, the pause 0 (the reference: TokenBucket.throttling_ns)
    notices = run({"topic.a.publishMaxByteRate": "1000000001"}, [ev(0), ev(1, size=1_000_000_001)])
    assert summary(notices) == [(1, "TopicProduceQuotaExceeded", 0, "unsupported", 0)]


def test_the_minted_token_counts_for_later_events() -> None:
    rate = 1_000_000_001
    events = [ev(0, size=rate),
              *[ev(t, size=1_000_000 if t % 2 else 1_000_001, producer=t % 3) for t in range(1, 40)]]
    notices = run({"brokerPublisherThrottlingMaxByteRate": str(rate)}, events)
    assert [(n.ts_ms, n.connection_paused_ms) for n in notices] == [(0, 16), (2, 0)]
    run({"topic.a.publishMaxByteRate": "1048576"}, [ev(t, size=s) for t, s in
                                                   ((0, 1048576), (1, 1048), (2, 1049), (17, 20000))])


def test_values_at_the_long_limits() -> None:
    # sums of bytes, spans of time and pauses beyond int64 are exact (Python ints in the kernel)
    props = {"topic.a.publishMaxByteRate": "1", "maxMessagePublishBufferSizeInMB": "8796093022207",
             "brokerPublisherThrottlingMaxMessageRate": "9223372036",
             "throttleProducerReceiptWaitTimeMillis": str(LONG),
             "maxPendingPublishRequestsPerConnection": "2"}
    events = [ev(-LONG - 1, size=LONG, publish_latency_ms=LONG, supports_throttle=True),
              ev(0, size=LONG, messages=LONG, publish_latency_ms=LONG, receipt_latency_ms=LONG),
              ev(LONG, "b", size=LONG, messages=LONG, publish_latency_ms=LONG, supports_throttle=True),
              ev(LONG, size=LONG, conn="c2", publish_latency_ms=LONG)]
    notices = run(props, events)
    assert max(n.pause_for_millis for n in notices) > LONG


def test_input_order_does_not_matter_and_nulls_come_first() -> None:
    props = {**TOPIC_A, "maxPendingPublishRequestsPerConnection": "2"}
    events = [ev(0, size=600, receipt_latency_ms=5, supports_throttle=True), ev(0, size=600),
              ev(0, size=600, receipt_latency_ms=None, supports_throttle=True),
              ev(0, "b", size=1, producer=0),
              ev(0, size=600, messages=None), ev(0, size=600, messages=2)]
    first = run(props, events)
    assert [n.as_dict() for n in run(props, events[::-1])] == [n.as_dict() for n in first]


@settings(parent=settings.get_profile("kernel"))
@given(traffic(brokers=2))
def test_kernel_matches_the_reference(generated: tuple[NoticeConfig, list[dict[str, Any]]]) -> None:
    config, events = generated
    kernel_agrees(config, events)


def test_a_large_broker() -> None:
    rng = np.random.default_rng(7)
    n = 20_000
    columns = (np.sort(rng.integers(0, 20_000, n)), rng.choice(["a", "b", "c"], n), rng.integers(0, 3000, n),
               rng.integers(0, 20, n), rng.integers(0, 3, n), rng.integers(0, 100, n), rng.random(n) < 0.5,
               rng.integers(0, 200, n))
    events = [ev(int(t), str(topic), int(s), conn=f"c{c}", producer=int(p), publish_latency_ms=int(lat),
                 supports_throttle=bool(sup), receipt_latency_ms=int(r))
              for t, topic, s, c, p, lat, sup, r in zip(*columns, strict=True)]
    props = {"namespace.public/default.publishMaxByteRate": "1048576", "topic.c.publishMaxMessageRate": "7",
             "brokerPublisherThrottlingMaxByteRate": "4000000", "maxPendingPublishRequestsPerConnection": "8",
             "maxMessagePublishBufferSizeInMB": "1", "numIOThreads": "16"}
    assert len(run(props, events)) > 100


def pauses(notices: Sequence[Notice]) -> list[tuple[int, int, int]]:
    return [(n.ts_ms, n.producer_id, n.pause_for_millis) for n in notices]


@pytest.mark.parametrize(("rate", "step", "k"), [(1048576, 19, 18), (3145728, 19, 6), (10485760, 16, 6),
                                                 (87834657, 3, 1)])
def test_a_carry_that_makes_a_token_at_mib_rates(rate: int, step: int, k: int) -> None:
    # events every `step` ms carry ceil(10^9 / rate) ns first at `k * step`: more than a token's time,
    # so the forced update of a breach there mints a token
    bucket, carries = TokenBucket(rate, 0), []
    for i in range(k + 1):
        bucket.consume(i * step * 1_000_000, 0)
        carries.append(bucket.remainder_ns)
    assert carries[-1] == -(-1_000_000_000 // rate) > max(carries[:-1])
    props = {"topic.a.publishMaxByteRate": str(rate)}
    idle = [ev(i * step, producer=2) for i in range(k)]
    end = k * step
    # a balance of 0 becomes 1: a notice with pause 0; the minted token is there for the next event
    assert pauses(run(props, [*idle, ev(end, size=rate), ev(end, size=1, producer=3)])) == [
        (end, 1, 0), (end, 3, 16)]
    # a balance of -1 becomes 0: the target's 16 ms instead of 17
    assert pauses(run(props, [*idle, ev(end, size=rate + 1)])) == [(end, 1, 16)]
    # a step earlier the carry is short of a token's time: -1 stays, 17 ms
    assert pauses(run(props, [*idle[:-1], ev(end - step, size=rate + 1)])) == [(end - step, 1, 17)]


@pytest.mark.parametrize("rate", [1048576, 3145728, 10485760, 87834657])
def test_many_forced_updates_over_a_long_bucket(rate: int) -> None:
    # a topic and the broker limited at rates with a carry, a message rate with a carry too: the
    # balances hover around 0, so thousands of notices, many with a forced update that mints a token
    rng = np.random.default_rng(rate)
    n = 6000
    times, sizes = np.sort(rng.integers(0, 60_000, n)), rng.integers(0, rate // 30, n)
    producers, messages = rng.integers(0, 40, n), rng.integers(1, 50, n)
    events = [ev(int(t), "a" if p % 4 else "b", int(s), producer=int(p), messages=int(m))
              for t, s, p, m in zip(times, sizes, producers, messages, strict=True)]
    props = {"topic.a.publishMaxByteRate": str(rate), "topic.a.publishMaxMessageRate": "1500",
             "brokerPublisherThrottlingMaxByteRate": str(rate + rate // 3)}
    assert len(run(props, events)) > 900


@pytest.mark.parametrize("rate", [7, 1500, 1048576, 3145728, 10485760, 87834657, 1_000_000_001, 9223372036])
@pytest.mark.parametrize("spread", [5, 400])
def test_the_carries_follow_the_update(rate: int, spread: int) -> None:
    # the table of gaps and carries (few distinct gaps) and the step per event (many), from any carry
    rng = np.random.default_rng(spread)
    gaps = np.r_[0, rng.integers(0, spread, 300), 10**6, 2**40]
    kind = _fits(rate * 2**40)
    carries = _Carries(gaps, rate, kind)
    states = -(-10**9 // rate) + 1
    assert (carries.table is None) == (len(np.unique(gaps)) * states > 2 * len(gaps) + 65_536)
    for start in (0, 1, -(-10**9 // rate)):
        expected_made, expected_carried, carry = [], [], start
        for gap in gaps.tolist():
            made, carry = new_tokens(gap * 1_000_000 + carry, rate)
            expected_made.append(made)
            expected_carried.append(carry)
        carried = carries.carried(0, len(gaps), start)
        assert carried.tolist() == expected_carried
        assert carries.made(0, len(gaps), np.r_[start, carried[:-1]]).tolist() == expected_made
        assert carries.carried(5, 9, expected_carried[4]).tolist() == expected_carried[5:9]


@pytest.mark.parametrize("times", [0, 1, 3, 1000])
def test_the_event_order_is_the_sort_by_every_key(times: int) -> None:
    # one sort by time, the other keys only among the events of one time: the order of a sort by
    # (time, then every key), from any input order; no event tied, some, or all (one time)
    rng = np.random.default_rng(times)
    n = 2_000
    ts = rng.integers(0, max(times, 1), n) if times else np.arange(n)
    keys = tuple(rng.integers(0, 3, n) for _ in range(4))
    assert _event_order(ts, keys).tolist() == np.lexsort((*keys, ts)).tolist()
    assert _event_order(ts[:0], tuple(k[:0] for k in keys)).tolist() == []
