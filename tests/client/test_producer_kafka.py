"""`ThrottleAwareProducer` end to end with real parts (docs/notices.md, "The producer"): its
confluent-kafka producer writes to the session's real Kafka cluster (tests/support/kafka, or the
cluster of `QUOTAPLANE_KAFKA_BOOTSTRAP`), while the live service's `NoticeChannel` sends the notices.
A confluent-kafka consumer reads what arrived."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from quotaplane.client import ClientMetrics, ProducerThrottledError, ThrottleAwareProducer
from quotaplane.live.notice_channel import NoticeChannel
from quotaplane.notices.protocol import Reason
from tests.support.kafka.cluster import KafkaCluster
from tests.support.kafka.external import ExternalCluster

pytestmark = pytest.mark.slow
TOPIC = Reason.TopicProduceQuotaExceeded
N = 20


@pytest.fixture
def bootstrap(kafka_cluster: KafkaCluster | ExternalCluster) -> str:
    """The session's real Kafka cluster (or the one `QUOTAPLANE_KAFKA_BOOTSTRAP` names)."""
    return kafka_cluster.bootstrap


@pytest.fixture
def channel() -> Iterator[NoticeChannel]:
    channel = NoticeChannel(host="127.0.0.1", port=0, receipt_wait_ms=100)
    channel.start()
    yield channel
    channel.stop()


@pytest.fixture
def topics(bootstrap: str) -> tuple[str, str]:
    """Two new single-partition topics: the one to throttle and the other."""
    names = (f"throttled-{uuid.uuid4().hex[:8]}", f"other-{uuid.uuid4().hex[:8]}")
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until its futures are done
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=1, replication_factor=1) for name in names], operation_timeout=10)
    for future in futures.values():
        future.result(10)
    return names


def wait_for(condition: Callable[[], object], timeout: float = 5.0, poll: Callable[[], Any] = lambda: None
             ) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        poll()
        time.sleep(0.005)


def consume(bootstrap: str, topic: str, expected: int) -> list[Message]:
    """Every message of the topic's partition 0: `expected` of them and no more."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    messages: list[Message] = []
    try:
        deadline = time.monotonic() + 10
        while len(messages) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                messages.append(message)
            elif message is not None and message.error().code() != KafkaError._PARTITION_EOF:
                raise AssertionError(f"consuming {topic}: {message.error()}")
        extra = consumer.poll(0.3)
        assert extra is None or extra.error() is not None, f"more than {expected} messages in {topic}"
    finally:
        consumer.close()
    return messages


def connect(bootstrap: str, channel: NoticeChannel, topics: tuple[str, ...], metrics: ClientMetrics,
            **kwargs: Any) -> ThrottleAwareProducer:
    """A producer registered on the channel for `topics`, with one delivered message per topic (so
    the broker connection and metadata are ready before anything is timed)."""
    producer = ThrottleAwareProducer({"bootstrap.servers": bootstrap, "linger.ms": 0},
                                     notices=channel.address, metrics=metrics, **kwargs)
    for topic in topics:
        producer.register_topic(topic)
        producer.produce(topic, b"warm-up")
    assert producer.flush(10) == 0
    wait_for(lambda: channel.stats()["producers"] == len(topics))
    return producer


def test_the_throttled_topic_arrives_after_the_pause_the_other_at_once_nothing_lost(
        bootstrap: str, channel: NoticeChannel, topics: tuple[str, str]) -> None:
    held, other = topics
    metrics = ClientMetrics()
    producer = connect(bootstrap, channel, topics, metrics)
    pause_ms = 1500
    delivered: dict[bytes, float] = {}

    def record(err: KafkaError | None, msg: Message) -> None:
        assert err is None, err
        delivered[msg.value()] = time.monotonic()

    try:
        wall, before = time.time(), time.monotonic()
        [notice] = channel.throttle(reason=TOPIC, pause_ms=pause_ms, topic=held)
        assert notice.topic == held
        wait_for(lambda: producer.is_throttled(held))
        produced = time.monotonic()
        for i in range(N):
            producer.produce(held, f"h{i}".encode(), on_delivery=record)
            producer.produce(other, f"o{i}".encode(), on_delivery=record)
        wait_for(lambda: all(f"o{i}".encode() in delivered for i in range(N)), timeout=2, poll=producer.poll)
        # the other topic's messages arrived at once, while the throttled topic's are all still held
        assert max(delivered[f"o{i}".encode()] for i in range(N)) - produced < 0.5
        assert time.monotonic() < before + pause_ms / 1000
        assert producer.held(held) == N and producer.is_throttled(held)
        assert producer.flush(10) == 0
        assert min(delivered[f"h{i}".encode()] for i in range(N)) >= before + pause_ms / 1000
        assert channel.wait_receipts(2)
        stats = channel.stats()
        assert (stats["sent"], stats["in_time"], stats["late"], stats["absent"]) == (1, 1, 0, 0)
        assert metrics.throttled_times(TOPIC.name, held) == 1
    finally:
        producer.close()

    held_messages = consume(bootstrap, held, N + 1)
    other_messages = consume(bootstrap, other, N + 1)
    assert [m.value() for m in held_messages] == [b"warm-up"] + [f"h{i}".encode() for i in range(N)]
    assert [m.value() for m in other_messages] == [b"warm-up"] + [f"o{i}".encode() for i in range(N)]
    # CreateTime is stamped when the wrapper hands the message to the Kafka producer
    assert min(m.timestamp()[1] for m in held_messages[1:]) >= int((wall + pause_ms / 1000) * 1000) - 5
    assert max(m.timestamp()[1] for m in other_messages[1:]) <= int(wall * 1000) + 500


def test_a_message_held_above_80_percent_of_its_send_timeout_fails_when_the_rule_says(
        bootstrap: str, channel: NoticeChannel, topics: tuple[str, str]) -> None:
    held, _ = topics
    metrics = ClientMetrics()
    producer = connect(bootstrap, channel, (held,), metrics)
    failed_at: list[float] = []
    try:
        channel.throttle(reason=TOPIC, pause_ms=1500, topic=held)
        wait_for(lambda: producer.is_throttled(held))
        produced = time.monotonic()
        late = producer.produce(held, b"late", send_timeout_ms=1000)  # 1500 ms of 1000: fails at 800 ms
        late.add_done_callback(lambda _: failed_at.append(time.monotonic()))
        ok = producer.produce(held, b"ok", send_timeout_ms=2000)  # at most 1500 ms of 2000: 75%
        error = late.exception(5)
        assert isinstance(error, ProducerThrottledError)
        assert (error.topic, error.reason, error.send_timeout_ms) == (held, TOPIC, 1000)
        assert 800 < error.held_ms < 900
        assert 0.8 < failed_at[0] - produced < 0.9
        assert not ok.done() and producer.is_throttled(held)
        assert producer.flush(10) == 0
        assert ok.result(0).value() == b"ok"
    finally:
        producer.close()
    assert [m.value() for m in consume(bootstrap, held, 2)] == [b"warm-up", b"ok"]


def test_a_later_notice_shortens_the_pause(bootstrap: str, channel: NoticeChannel,
                                           topics: tuple[str, str]) -> None:
    held, _ = topics
    producer = connect(bootstrap, channel, (held,), ClientMetrics())
    try:
        channel.throttle(reason=TOPIC, pause_ms=10_000, topic=held)
        wait_for(lambda: producer.is_throttled(held))
        future = producer.produce(held, b"x")
        time.sleep(0.2)
        assert not future.done()
        shortened = time.monotonic()
        channel.throttle(reason=TOPIC, pause_ms=300, topic=held)
        assert producer.flush(5) == 0
        delivered = time.monotonic()
        assert future.result(0).value() == b"x"
        assert 0.3 <= delivered - shortened < 2
    finally:
        producer.close()
    assert [m.value() for m in consume(bootstrap, held, 2)] == [b"warm-up", b"x"]
