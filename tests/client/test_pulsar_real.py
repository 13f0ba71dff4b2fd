"""PIP-385's side against the real broker (issue 65; docs/notices.md "Against a real broker").

- A topic publish rate set through the admin API and a producer offering five times that rate: the
  broker's real pauses (the time its acknowledgements fall behind the offered traffic, its
  `publishRateLimitedTimes`) against what quotaplane's notices engine decides for the same traffic
  (`quotaplane.notices.engine.evaluate`: the notices, their pauses, the connection pause without
  notices, which is what the broker does today).
- `ThrottleAwarePulsarProducer` on a real pulsar-client producer, throttled through a real
  `NoticeChannel` with the pause the engine computed for that rate: it holds the topic's messages for
  the pause, then the broker receives every one of them, in order.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from quotaplane.client import ClientMetrics, ThrottleAwarePulsarProducer
from quotaplane.live.notice_channel import NoticeChannel
from quotaplane.notices.config import parse_notice_config
from quotaplane.notices.engine.evaluate import Notice, evaluate
from quotaplane.notices.protocol import Reason
from tests.support.pulsar.fixture import PulsarTarget
from tests.support.pulsar.scenarios import PAYLOAD, fresh_namespace, topic_stats, wait_until

pytestmark = pytest.mark.xdist_group("pulsar")
RATE = 20  # messages per second, the topic's publishRate
OFFERED = 100  # messages per second the producer offers
COUNT = 60
GAP_MS = 30  # a pause in the broker's reads: 100-byte messages are read ~1 ms apart otherwise
MATCH_MS = 30


def limit_rate(target: PulsarTarget, topic: str) -> None:
    path = f"admin/v2/{topic.replace('://', '/')}/publishRate"
    target.call("POST", path, {"publishThrottlingRateInMsg": RATE, "publishThrottlingRateInByte": 0})
    wait_until("the publish rate is in force",
               lambda: (target.call("GET", path) or {}).get("publishThrottlingRateInMsg") == RATE)
    time.sleep(1.5)  # the topic applies its policies once the system topic delivers them


def engine_notices(topic: str, sent_ms: list[int]) -> list[Notice]:
    config = parse_notice_config({f"topic.{topic}.publishMaxMessageRate": str(RATE)})
    return evaluate(config, [{"ts_ms": t, "connection_id": "producer", "producer_id": 0, "topic": topic,
                              "bytes": len(PAYLOAD)} for t in sent_ms])


def test_the_brokers_pauses_against_the_notices_engine(pulsar_broker: PulsarTarget) -> None:
    ns = fresh_namespace(pulsar_broker, "rate")
    topic = f"persistent://{ns}/limited"
    client = pulsar_broker.client()
    try:
        producer = client.create_producer(topic, batching_enabled=False, max_pending_messages=COUNT)
        limit_rate(pulsar_broker, topic)
        sent: list[float] = []
        acked: dict[int, float] = {}
        done = threading.Event()

        def on_ack(index: int) -> Any:
            def callback(result: Any, _message_id: Any) -> None:
                assert str(result).endswith("Ok"), result
                acked[index] = time.time() * 1000
                if len(acked) == COUNT:
                    done.set()
            return callback

        start = time.monotonic()
        for i in range(COUNT):
            time.sleep(max(0.0, start + i / OFFERED - time.monotonic()))
            sent.append(time.time() * 1000)
            producer.send_async(PAYLOAD, on_ack(i))
        assert done.wait(30), f"{len(acked)} of {COUNT} acknowledged"
        throttled_times = topic_stats(pulsar_broker, topic)["publishRateLimitedTimes"]
    finally:
        client.close()
    reads = sorted(acked.values())  # the broker reads, persists and acknowledges within milliseconds
    gaps = [(reads[i], reads[i + 1] - reads[i]) for i in range(COUNT - 1) if reads[i + 1] - reads[i] > GAP_MS]
    paused_by_broker = sum(gap for _, gap in gaps)
    achieved = (COUNT - RATE) / ((reads[-1] - reads[RATE]) / 1000)  # after the bucket's first second
    # quotaplane on the traffic as the broker read it: where its token bucket pauses the connection
    notices = engine_notices(topic, [int(t) for t in reads])
    paused_by_engine = sum(n.connection_paused_ms_without_notices for n in notices)
    matched = [n for n in notices if any(abs(n.ts_ms - start) <= MATCH_MS for start, _ in gaps)]
    # and on the traffic as it was offered (the backtest's replay, docs/notices.md)
    offered = engine_notices(topic, [int(t) for t in sent])
    print(f"rate: broker paused reads {len(gaps)} times for {paused_by_broker:.0f} ms "
          f"(publishRateLimitedTimes "
          f"{throttled_times}), {achieved:.1f} msg/s after the first {RATE}; quotaplane on the reads: "
          f"{len(notices)} notices, {len(matched)} at a broker pause, {paused_by_engine} ms paused; on the "
          f"offered traffic: {len(offered)} notices, pauses {[n.pause_for_millis for n in offered]} ms; the "
          f"last message {max(acked[i] - sent[i] for i in range(COUNT)):.0f} ms late")
    assert throttled_times > 0 and gaps and {n.reason for n in notices} == {"TopicProduceQuotaExceeded"}
    assert all(n.receipt == "unsupported" for n in notices)  # no broker implements PIP-385
    assert RATE * 0.7 <= achieved <= RATE * 1.3
    # the engine's pauses start where the broker paused its reads, and add up to about as long
    assert len(matched) >= 0.8 * len(notices)
    assert abs(paused_by_engine - paused_by_broker) <= 0.3 * paused_by_broker


def test_the_pulsar_producer_holds_a_notice_then_the_broker_gets_every_message(
        pulsar_broker: PulsarTarget) -> None:
    ns = fresh_namespace(pulsar_broker, "notice")
    topic = f"persistent://{ns}/held"
    pause_ms = engine_notices(topic, [1000 + 10 * i for i in range(COUNT)])[0].pause_for_millis
    assert pause_ms > 0
    channel = NoticeChannel(receipt_wait_ms=100)
    channel.start()
    client = pulsar_broker.client()
    try:
        consumer = client.subscribe(topic, "check")
        producer = ThrottleAwarePulsarProducer.create(client, topic, send_timeout_ms=30_000,
                                                      notices=channel.address, metrics=ClientMetrics())
        wait_until("the producer registers on the channel", lambda: channel.stats().get("producers"))
        sent = channel.throttle(reason=Reason.TopicProduceQuotaExceeded, pause_ms=pause_ms, topic=topic)
        assert len(sent) == 1
        wait_until("the producer applies the notice", producer.is_throttled, timeout_s=5, every_s=0.01)
        start = time.monotonic()
        futures = [producer.send_async(f"m{i}".encode()) for i in range(5)]
        assert producer.held() == 5
        for future in futures:
            future.result(10)
        held_s = time.monotonic() - start
        assert channel.wait_receipts(timeout_s=2)
        received = [consumer.receive(timeout_millis=5000).data() for _ in range(5)]
        assert received == [f"m{i}".encode() for i in range(5)]
        assert topic_stats(pulsar_broker, topic)["msgInCounter"] == 5
        # the hold ends at the receipt time + the pause: less than the pause after the notice arrived
        assert held_s <= pause_ms / 1000 + 1.0 and not producer.is_throttled()
        producer.close()
    finally:
        client.close()
        channel.stop()
