"""`quotaplane.client` against a stand-in producer and a small notice server (docs/notices.md, "The
producer"): hold and resume, later commands extending or shortening a pause, other topics flowing,
the 80% rule at its boundary, order, metrics, the notice connection (receipts, reconnecting and
registering again after a drop, bad commands counted and ignored) and the Pulsar adapter."""

from __future__ import annotations

import socket
import struct
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import KafkaError, Message
from prometheus_client import CollectorRegistry, generate_latest

from quotaplane.client import (
    ClientMetrics,
    NoticeConnection,
    ProducerThrottledError,
    ThrottleAwareProducer,
    ThrottleAwarePulsarProducer,
)
from quotaplane.client.hold import exceeds
from quotaplane.notices import notices_pb2 as pb
from quotaplane.notices.protocol import (
    FrameReader,
    Reason,
    connected,
    frame,
    register_producer,
    throttle_producer,
)
from tests.support import tools
from tests.support.pulsar.fixture import PulsarTarget

TOPIC = Reason.TopicProduceQuotaExceeded
GROUP = Reason.ResourceGroupProduceQuotaExceeded


class FakeClock:
    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class StandInProducer:
    """confluent-kafka's `Producer` surface the wrapper uses; records what it was given, in order."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []
        self.waiting: list[tuple[Callable[..., None], Message]] = []
        self.full = False

    def produce(self, topic: str, value: Any = None, key: Any = None, on_delivery: Any = None,
                **kwargs: Any) -> None:
        if self.full:
            raise BufferError("Local: Queue full")
        self.sent.append((topic, value))
        self.waiting.append((on_delivery, Message(topic=topic, value=value, key=key, partition=0,
                                                  offset=len(self.sent) - 1)))

    def poll(self, timeout: float = 0) -> int:
        served = 0
        while self.waiting:
            callback, message = self.waiting.pop(0)
            callback(None, message)
            served += 1
        return served

    def flush(self, timeout: float = -1) -> int:
        self.poll()
        return 0

    def __len__(self) -> int:
        return len(self.waiting)


def make(clock: FakeClock, metrics: ClientMetrics | None = None, **kwargs: Any
         ) -> tuple[ThrottleAwareProducer, StandInProducer]:
    stand_in = StandInProducer()
    if metrics is None and not isinstance(kwargs.get("notices"), NoticeConnection):
        metrics = ClientMetrics()  # not the process's shared one
    producer = ThrottleAwareProducer({}, clock=clock, metrics=metrics, background=False,
                                     producer=stand_in, **kwargs)  # type: ignore[arg-type]
    return producer, stand_in


def values(stand_in: StandInProducer, topic: str) -> list[Any]:
    return [v for t, v in stand_in.sent if t == topic]


# --- the hold rule ---------------------------------------------------------------------------------


def test_a_throttled_topic_is_held_until_the_pause_ends_while_other_topics_flow() -> None:
    clock = FakeClock()
    producer, stand_in = make(clock)
    producer.throttle("a", TOPIC, 1000)
    assert producer.is_throttled("a") and not producer.is_throttled("b")
    for i in range(3):
        producer.produce("a", f"a{i}")
        producer.produce("b", f"b{i}")
    assert stand_in.sent == [("b", "b0"), ("b", "b1"), ("b", "b2")]
    assert producer.held("a") == 3 and len(producer) == 6
    clock.now = 100.999
    producer.pump()
    assert producer.held("a") == 3 and producer.is_throttled("a")
    clock.now = 101.0  # receipt time + pause_for_millis
    assert not producer.is_throttled("a")
    producer.pump()
    assert values(stand_in, "a") == ["a0", "a1", "a2"]
    assert producer.held() == 0
    producer.produce("a", "a3")  # the pause is over: straight through
    assert values(stand_in, "a")[-1] == "a3"


def test_a_later_command_extends_the_pause() -> None:
    clock = FakeClock()
    producer, stand_in = make(clock)
    producer.throttle("a", TOPIC, 1000)
    producer.produce("a", "x")
    clock.now = 100.5
    producer.throttle("a", GROUP, 1000)  # ends at 101.5 now, not 101.0
    clock.now = 101.2
    producer.pump()
    assert values(stand_in, "a") == [] and producer.throttled_until("a") == pytest.approx(101.5)
    clock.now = 101.5
    producer.pump()
    assert values(stand_in, "a") == ["x"]


def test_a_later_command_shortens_the_pause() -> None:
    clock = FakeClock()
    producer, stand_in = make(clock)
    producer.throttle("a", TOPIC, 5000)
    producer.produce("a", "x")
    clock.now = 101.0
    producer.throttle("a", TOPIC, 200)
    clock.now = 101.199
    producer.pump()
    assert values(stand_in, "a") == []
    clock.now = 101.2
    producer.pump()
    assert values(stand_in, "a") == ["x"]


def test_a_pause_of_zero_holds_nothing_but_is_counted() -> None:
    clock, metrics = FakeClock(), ClientMetrics()
    producer, stand_in = make(clock, metrics)
    producer.throttle("a", Reason.ConnectionPendingMessagesBreach, 0)  # connection-level: pause 0
    assert not producer.is_throttled("a")
    producer.produce("a", "x")
    assert values(stand_in, "a") == ["x"]
    assert metrics.throttled_times("ConnectionPendingMessagesBreach", "a") == 1


def test_order_is_kept_when_the_producer_queue_is_full_at_release() -> None:
    clock = FakeClock()
    producer, stand_in = make(clock)
    producer.throttle("a", TOPIC, 100)
    for i in range(3):
        producer.produce("a", i)
    clock.now = 100.1
    stand_in.full = True
    producer.pump()
    assert values(stand_in, "a") == [] and producer.held("a") == 3 and not producer.is_throttled("a")
    producer.produce("a", 3)  # not throttled, but behind the held ones
    assert producer.held("a") == 4
    stand_in.full = False
    producer.pump()
    assert values(stand_in, "a") == [0, 1, 2, 3]


def test_a_full_queue_on_the_direct_path_raises_as_confluent_kafka_does() -> None:
    producer, stand_in = make(FakeClock())
    stand_in.full = True
    with pytest.raises(BufferError):
        producer.produce("a", "x")


# --- the 80% rule ----------------------------------------------------------------------------------


def test_the_80_percent_boundary_is_strict() -> None:
    assert not exceeds(0.8, 1000) and exceeds(0.800001, 1000)
    assert not exceeds(24.000000000000014, 30_000)  # float noise is not a microsecond
    assert not exceeds(1e9, 0)  # no send timeout


def test_a_message_held_exactly_80_percent_is_not_failed_and_one_held_longer_is() -> None:
    clock = FakeClock()
    producer, stand_in = make(clock, send_timeout_ms=1000)
    producer.throttle("a", TOPIC, 5000)
    reports: list[tuple[Any, Any]] = []
    future = producer.produce("a", "x", on_delivery=lambda err, msg: reports.append((err, msg)))
    clock.now = 100.8  # held 800 ms of 1000: 80%, not above
    producer.poll(0)
    assert producer.held("a") == 1 and not future.done() and reports == []
    clock.now = 100.800001
    assert producer.poll(0) == 1
    assert producer.held("a") == 0
    err, msg = reports[0]
    assert isinstance(err, ProducerThrottledError)
    assert (err.topic, err.reason, err.send_timeout_ms) == ("a", TOPIC, 1000)
    assert err.held_ms == pytest.approx(800.001)
    assert err.code() == KafkaError._MSG_TIMED_OUT
    assert "'a'" in str(err) and "TopicProduceQuotaExceeded" in str(err)
    assert (msg.topic(), msg.value(), msg.error().code()) == ("a", "x", KafkaError._MSG_TIMED_OUT)
    with pytest.raises(ProducerThrottledError):
        future.result(0)
    clock.now = 106.0
    producer.flush(0)
    assert values(stand_in, "a") == []  # failed, so not sent


@pytest.mark.parametrize(("pause_ms", "fails"), [(800, False), (801, True)])
def test_the_rule_judges_the_hold_until_the_pause_end_however_late_the_pump(pause_ms: int,
                                                                           fails: bool) -> None:
    clock = FakeClock()
    producer, stand_in = make(clock, send_timeout_ms=1000)
    producer.throttle("a", TOPIC, pause_ms)
    future = producer.produce("a", "x")
    clock.now = 105.0  # nothing ran between the produce and now
    producer.pump()
    assert future.done() is fails
    assert values(stand_in, "a") == ([] if fails else ["x"])
    if fails:
        assert future.exception().held_ms == pytest.approx(pause_ms)  # type: ignore[union-attr]


def test_the_send_timeout_is_per_message_and_zero_means_none() -> None:
    clock = FakeClock()
    producer, stand_in = make(clock, send_timeout_ms=10_000)
    producer.throttle("a", TOPIC, 60_000)
    short = producer.produce("a", "short", send_timeout_ms=100)
    default = producer.produce("a", "default")
    never = producer.produce("a", "never", send_timeout_ms=0)
    clock.now = 100.0801
    producer.pump()
    assert short.done() and not default.done()
    clock.now = 108.0001
    producer.pump()
    assert default.done() and not never.done()
    clock.now = 160.0
    producer.pump()
    assert values(stand_in, "a") == ["never"]


def test_a_shortened_pause_is_judged_at_the_command_that_shortened_it() -> None:
    clock = FakeClock()
    producer, _ = make(clock, send_timeout_ms=1000)
    producer.throttle("a", TOPIC, 5000)
    future = producer.produce("a", "x")
    clock.now = 100.9  # already above 80%, though nothing pumped
    producer.throttle("a", TOPIC, 0)
    assert isinstance(future.exception(0), ProducerThrottledError)


def test_delivered_messages_complete_their_futures_and_callbacks() -> None:
    clock = FakeClock()
    producer, _ = make(clock)
    producer.throttle("a", TOPIC, 10)
    seen: list[Any] = []
    future = producer.produce("a", "x", callback=lambda err, msg: seen.append((err, msg.value())))
    clock.now = 100.01
    assert producer.flush(1) == 0
    assert future.result(0).value() == "x" and seen == [(None, "x")]


def test_flush_returns_what_is_still_held() -> None:
    producer, _ = make(FakeClock())
    producer.throttle("a", TOPIC, 1000)
    producer.produce("a", "x")
    assert producer.flush(0) == 1


def test_a_negative_send_timeout_is_refused() -> None:
    with pytest.raises(ValueError, match="send_timeout_ms=-1"):
        make(FakeClock(), send_timeout_ms=-1)


# --- metrics -------------------------------------------------------------------------------------


def test_throttled_times_counts_commands_by_reason_and_topic() -> None:
    registry = CollectorRegistry()
    metrics = ClientMetrics(registry)
    producer, _ = make(FakeClock(), metrics)
    producer.throttle("a", TOPIC, 100)
    producer.throttle("a", TOPIC, 100)
    producer.throttle("b", GROUP, 100)
    assert metrics.throttled_times("TopicProduceQuotaExceeded", "a") == 2
    assert metrics.throttled_times("ResourceGroupProduceQuotaExceeded", "b") == 1
    text = generate_latest(registry).decode()
    assert ('quotaplane_client_producer_throttled_times_total{reason="TopicProduceQuotaExceeded",'
            'topic="a"} 2.0') in text
    assert ('quotaplane_client_producer_throttled_times_total{reason="ResourceGroupProduceQuotaExceeded",'
            'topic="b"} 1.0') in text
    assert "_created" not in text


def test_promtool_finds_nothing_to_say_about_the_metrics() -> None:
    promtool = tools.promtool()
    registry = CollectorRegistry()
    metrics = ClientMetrics(registry)
    metrics.throttled("TopicProduceQuotaExceeded", "a")
    metrics.error("unknown_reason")
    result = subprocess.run([promtool, "check", "metrics"], input=generate_latest(registry),
                            capture_output=True, timeout=30)
    assert result.returncode == 0 and result.stdout == b"" and result.stderr == b"", result


# --- the notice connection -------------------------------------------------------------------------


class NoticeServer:
    """A minimal notice channel: answers CONNECT, records what each connection sent, sends frames."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = self.listener.getsockname()[:2]
        self.connections: list[tuple[socket.socket, list[pb.NoticeCommand]]] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            received: list[pb.NoticeCommand] = []
            with self._lock:
                self.connections.append((sock, received))
            threading.Thread(target=self._read, args=(sock, received), daemon=True).start()

    def _read(self, sock: socket.socket, received: list[pb.NoticeCommand]) -> None:
        reader = FrameReader()
        while True:
            try:
                data = sock.recv(65536)
            except OSError:
                return
            if not data:
                return
            for command in reader.feed(data):
                if command.type == pb.NoticeCommand.CONNECT:
                    sock.sendall(frame(connected(100)))
                with self._lock:
                    received.append(command)

    def received(self, index: int = -1) -> list[pb.NoticeCommand]:
        with self._lock:
            return list(self.connections[index][1]) if self.connections else []

    def receipts(self, index: int = -1) -> list[int]:
        return [c.throttle_producer_receipt.request_id for c in self.received(index)
                if c.type == pb.NoticeCommand.THROTTLE_PRODUCER_RECEIPT]

    def send(self, data: bytes, index: int = -1) -> None:
        with self._lock:
            sock = self.connections[index][0]
        sock.sendall(data)

    def drop(self, index: int = -1) -> None:
        with self._lock:
            sock = self.connections[index][0]
        sock.shutdown(socket.SHUT_RDWR)
        sock.close()

    def close(self) -> None:
        self.listener.close()
        with self._lock:
            for sock, _ in self.connections:
                sock.close()


def wait_for(condition: Callable[[], object], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.005)


@pytest.fixture
def server() -> Iterator[NoticeServer]:
    s = NoticeServer()
    yield s
    s.close()


@pytest.fixture
def connected_producer(server: NoticeServer) -> Iterator[tuple[ThrottleAwareProducer, StandInProducer,
                                                               FakeClock, ClientMetrics]]:
    clock, metrics = FakeClock(), ClientMetrics()
    producer, stand_in = make(clock, metrics, notices=server.address, principal="User:alice")
    assert producer.notices is not None and producer.notices.wait_connected(5)
    assert producer.register_topic("a") == 0 and producer.register_topic("b") == 1
    wait_for(lambda: len(server.received()) == 3)
    yield producer, stand_in, clock, metrics
    producer.close(0)


def raw_throttle(request_id: int, producer_id: int, reason: int, pause: int) -> bytes:
    """A THROTTLE_PRODUCER frame written field by field (any reason number, any uint64 pause)."""
    def varint(n: int) -> bytes:
        out = bytearray()
        while True:
            out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
            n >>= 7
            if not n:
                return bytes(out)
    inner = b"".join(bytes([tag]) + varint(v) for tag, v in
                     ((0x08, request_id), (0x10, producer_id), (0x20, reason), (0x28, pause)))
    body = (bytes([0x08]) + varint(pb.NoticeCommand.THROTTLE_PRODUCER)
            + bytes([0x2A]) + varint(len(inner)) + inner)
    return struct.pack(">II", 4 + len(body), len(body)) + body


def test_the_connection_announces_the_flag_registers_producers_and_answers_receipts(
        server: NoticeServer, connected_producer: Any) -> None:
    producer, stand_in, clock, metrics = connected_producer
    hello, register_a, register_b = server.received()
    assert hello.type == pb.NoticeCommand.CONNECT
    assert hello.connect.feature_flags.supports_throttle_producer_commands
    assert (register_a.register_producer.producer_id, register_a.register_producer.topic,
            register_a.register_producer.principal) == (0, "a", "User:alice")
    assert (register_b.register_producer.producer_id, register_b.register_producer.topic) == (1, "b")
    assert producer.notices.receipt_wait_ms == 100
    server.send(frame(throttle_producer(7, 0, TOPIC, 1000)))
    wait_for(lambda: server.receipts() == [7])
    assert producer.is_throttled("a") and not producer.is_throttled("b")
    assert metrics.throttled_times("TopicProduceQuotaExceeded", "a") == 1
    producer.produce("a", "held")
    producer.produce("b", "free")
    assert stand_in.sent == [("b", "free")]
    clock.now += 1.0
    producer.pump()
    assert values(stand_in, "a") == ["held"]


def test_a_drop_mid_pause_keeps_the_pause_then_reconnects_and_registers_again(
        server: NoticeServer, connected_producer: Any) -> None:
    producer, stand_in, clock, metrics = connected_producer
    server.send(frame(throttle_producer(1, 0, TOPIC, 2000)))
    wait_for(lambda: server.receipts() == [1])
    producer.produce("a", "x")
    server.drop()
    wait_for(lambda: len(server.connections) == 2 and len(server.received()) == 3)
    assert metrics.errors("disconnected") == 1
    hello, *registers = server.received()
    assert hello.type == pb.NoticeCommand.CONNECT
    assert sorted((r.register_producer.producer_id, r.register_producer.topic) for r in registers) == [
        (0, "a"), (1, "b")]
    assert producer.is_throttled("a")  # the pause outlives the connection
    clock.now += 2.0
    producer.pump()
    assert values(stand_in, "a") == ["x"]
    server.send(frame(throttle_producer(1, 1, GROUP, 500)))  # request ids start again per connection
    wait_for(lambda: server.receipts() == [1])
    assert producer.is_throttled("b")


@pytest.mark.parametrize(("data", "error"), [
    (raw_throttle(5, 0, 9, 1000), "unknown_reason"),
    (raw_throttle(5, 0, 0, (1 << 64) - 1000), "negative_pause"),
    (frame(throttle_producer(5, 42, TOPIC, 1000)), "unknown_producer"),
    (frame(register_producer(3, "a")), "unexpected_command"),
    (struct.pack(">II", 7, 3) + b"\xff\xff\xff", "malformed"),
], ids=["unknown_reason", "negative_pause", "unknown_producer", "unexpected_command", "malformed"])
def test_a_bad_command_is_counted_and_ignored_without_a_receipt(
        server: NoticeServer, connected_producer: Any, data: bytes, error: str) -> None:
    producer, _, _, metrics = connected_producer
    server.send(data + frame(throttle_producer(6, 1, TOPIC, 1000)))  # a good one in the same packet
    wait_for(lambda: server.receipts() == [6])
    assert metrics.errors(error) == 1
    assert not producer.is_throttled("a") and producer.is_throttled("b")
    assert len(server.connections) == 1  # no reconnect


def test_a_duplicate_request_id_is_acknowledged_but_not_applied_again(
        server: NoticeServer, connected_producer: Any) -> None:
    producer, _, clock, metrics = connected_producer
    server.send(frame(throttle_producer(1, 0, TOPIC, 1000)))
    wait_for(lambda: server.receipts() == [1])
    clock.now += 0.5
    server.send(frame(throttle_producer(1, 0, TOPIC, 1000)))
    wait_for(lambda: server.receipts() == [1, 1])
    assert metrics.errors("duplicate_request_id") == 1
    assert metrics.throttled_times("TopicProduceQuotaExceeded", "a") == 1
    assert producer.throttled_until("a") == pytest.approx(clock.now + 0.5)  # not extended


def test_a_frame_that_breaks_the_framing_makes_the_client_reconnect(
        server: NoticeServer, connected_producer: Any) -> None:
    producer, _, _, metrics = connected_producer
    server.send(struct.pack(">II", 100, 7))  # command size is not total size - 4
    wait_for(lambda: len(server.connections) == 2 and len(server.received()) == 3)
    assert metrics.errors("framing") == 1
    server.send(frame(throttle_producer(1, 0, TOPIC, 1000)))
    wait_for(lambda: server.receipts() == [1])
    assert producer.is_throttled("a")


def test_without_a_channel_the_producer_sends_and_retries_the_connection() -> None:
    probe = socket.create_server(("127.0.0.1", 0))
    address = probe.getsockname()[:2]
    probe.close()  # nothing listens there now
    clock, metrics = FakeClock(), ClientMetrics()
    producer, stand_in = make(clock, metrics, notices=address)
    try:
        producer.produce("a", "x")
        assert stand_in.sent == [("a", "x")]
        wait_for(lambda: metrics.errors("connect_failed") >= 2)
        assert producer.notices is not None and not producer.notices.connected
    finally:
        producer.close(0)


def test_producers_can_share_one_connection(server: NoticeServer) -> None:
    metrics = ClientMetrics()
    connection = NoticeConnection(server.address, client_id="shared", metrics=metrics).start()
    clock = FakeClock()
    one, _ = make(clock, notices=connection)
    two, _ = make(clock, notices=connection)
    try:
        assert one.register_topic("a") == 0 and two.register_topic("b") == 1
        assert one.metrics is metrics
        wait_for(lambda: len(server.received()) == 3)
        server.send(frame(throttle_producer(1, 1, TOPIC, 1000)))
        wait_for(lambda: server.receipts() == [1])
        assert two.is_throttled("b") and not one.is_throttled("b")
    finally:
        one.close(0)
        two.close(0)
        connection.stop()


def test_the_timer_thread_releases_held_messages_in_real_time() -> None:
    stand_in = StandInProducer()
    producer = ThrottleAwareProducer({}, metrics=ClientMetrics(), producer=stand_in)  # type: ignore[arg-type]
    try:
        producer.throttle("a", TOPIC, 50)
        start = time.monotonic()
        producer.produce("a", "x")
        wait_for(lambda: stand_in.sent == [("a", "x")], timeout=2)
        assert time.monotonic() - start >= 0.045
    finally:
        producer.close()


# --- the Pulsar adapter ----------------------------------------------------------------------------


class StandInResult:
    """pulsar-client's `Result` enum is a pybind11 enum: it has a `name`."""

    def __init__(self, name: str) -> None:
        self.name = name


class StandInPulsarProducer:
    """The surface of `pulsar.Producer` the adapter calls, for the rule's exact boundaries on an
    injected clock, which a real producer does not run on (the real one:
    `test_the_pulsar_adapter_with_pulsar_client`)."""

    def __init__(self, topic: str) -> None:
        self._topic = topic
        self.sent: list[bytes] = []
        self.closed = False

    def topic(self) -> str:
        return self._topic

    def send_async(self, content: bytes, callback: Callable[[Any, Any], None], **kwargs: Any) -> None:
        self.sent.append(content)
        callback(StandInResult("Ok"), len(self.sent))

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def test_the_pulsar_adapter_holds_resumes_and_fails_by_the_same_rule() -> None:
    clock = FakeClock()
    stand_in = StandInPulsarProducer("persistent://public/default/t")
    producer = ThrottleAwarePulsarProducer(stand_in, send_timeout_ms=1000, clock=clock,
                                           metrics=ClientMetrics(), background=False)
    producer.throttle(stand_in.topic(), TOPIC, 500)
    assert producer.is_throttled()
    results: list[tuple[Any, Any]] = []
    first: Future[Any] = producer.send_async(b"1", lambda res, mid: results.append((res, mid)))
    assert stand_in.sent == []
    clock.now = 100.5
    producer.pump()
    assert stand_in.sent == [b"1"] and first.result(0) == 1 and results[0][1] == 1
    producer.throttle(stand_in.topic(), GROUP, 5000)
    failed = producer.send_async(b"2")
    clock.now = 101.3001
    producer.pump()
    error = failed.exception(0)
    assert isinstance(error, ProducerThrottledError) and error.reason is GROUP
    assert error.topic == "persistent://public/default/t"
    producer.close()
    assert stand_in.closed


@pytest.mark.xdist_group("pulsar")
def test_the_pulsar_adapter_with_pulsar_client(pulsar_broker: PulsarTarget) -> None:
    """The adapter on a real pulsar-client producer and the real broker (tests.support.pulsar)."""
    client = pulsar_broker.client()
    topic = f"persistent://public/default/quotaplane-{uuid.uuid4().hex[:8]}"
    try:
        consumer = client.subscribe(topic, "check")
        producer = ThrottleAwarePulsarProducer.create(client, topic, send_timeout_ms=2000,
                                                      metrics=ClientMetrics())
        producer.throttle(topic, TOPIC, 500)
        start = time.monotonic()
        producer.send(b"x")  # waits through the hold
        assert time.monotonic() - start >= 0.5
        assert consumer.receive(timeout_millis=5000).data() == b"x"
        producer.close()
    finally:
        client.close()
