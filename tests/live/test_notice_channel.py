"""The notice channel of the live service over real loopback sockets (docs/notices.md "The notice
channel"): the flow, the receipt outcomes, bad peers, the metrics, and `quotaplane serve --replay
--notice-port` sending BrokerProduceQuotaExceeded while the replayed factor is below 1."""

from __future__ import annotations

import io
import json
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from quotaplane.cli import main
from quotaplane.core.errors import ConfigError
from quotaplane.live import notice_channel
from quotaplane.live.notice_channel import NoticeChannel
from quotaplane.live.service import Options, Service
from quotaplane.notices import notices_pb2 as pb
from quotaplane.notices import protocol
from quotaplane.notices.protocol import FrameReader, Reason
from quotaplane.storage.config import parse_storage_config
from tests.support import tools

TOPIC = Reason.TopicProduceQuotaExceeded
S = "client.quota.callback.static."


def until(condition: Callable[[], bool], timeout: float = 2.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.002)


class Client:
    """A producer's side of the channel, blocking with a timeout."""

    def __init__(self, address: tuple[str, int], client_id: str | None = "c", supports: bool = True,
                 rcvbuf: int | None = None) -> None:
        self.sock = socket.socket()
        self.sock.settimeout(2)
        if rcvbuf is not None:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.connect(address)
        self.reader = FrameReader()
        self.queue: list[pb.NoticeCommand] = []
        if client_id is not None:
            self.send(protocol.connect(client_id, supports))
            answer = self.recv()
            assert answer.type == pb.NoticeCommand.CONNECTED

    def send(self, *commands: pb.NoticeCommand) -> None:
        self.sock.sendall(b"".join(protocol.frame(c) for c in commands))

    def recv(self) -> pb.NoticeCommand:
        while not self.queue:
            data = self.sock.recv(65536)
            assert data, "the server closed the connection"
            self.queue += self.reader.feed(data)
        return self.queue.pop(0)

    def notices(self, n: int) -> list[pb.CommandThrottleProducer]:
        out = [self.recv() for _ in range(n)]
        assert all(c.type == pb.NoticeCommand.THROTTLE_PRODUCER for c in out)
        return [c.throttle_producer for c in out]

    def closed_by_server(self) -> bool:
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def clock() -> list[float]:
    return [1000.0]


@pytest.fixture
def channel(clock: list[float]):
    ch = NoticeChannel(receipt_wait_ms=100, clock=lambda: clock[0], registry=CollectorRegistry())
    ch.start()
    yield ch
    ch.stop()


def registered(ch: NoticeChannel, n: int) -> None:
    until(lambda: ch.stats()["producers"] == n)


def sample(ch: NoticeChannel, name: str, **labels: str) -> float | None:
    return ch.registry.get_sample_value(name, labels)


def test_connect_is_answered_with_the_receipt_wait_time(channel: NoticeChannel) -> None:
    client = Client(channel.address, client_id=None)
    client.send(protocol.connect("app-1", True))
    answer = client.recv()
    assert answer.type == pb.NoticeCommand.CONNECTED
    assert answer.connected.throttle_producer_receipt_wait_time_millis == 100
    assert channel.stats()["connections"] == 1
    assert sample(channel, "quotaplane_notice_channel_connections") == 1.0
    client.close()


def test_a_connection_without_the_feature_flag_is_sent_nothing(channel: NoticeChannel) -> None:
    legacy = Client(channel.address, "legacy", supports=False)
    aware = Client(channel.address, "aware", supports=True)
    legacy.send(protocol.register_producer(1, "t"))
    aware.send(protocol.register_producer(1, "t"))
    registered(channel, 2)
    sent = channel.throttle(reason=TOPIC, pause_ms=50, topic="t")
    assert [(n.client_id, n.producer_id, n.request_id) for n in sent] == [("aware", 1, 1)]
    assert aware.notices(1)[0].request_id == 1
    legacy.sock.settimeout(0.05)
    with pytest.raises(TimeoutError):
        legacy.sock.recv(1)
    assert channel.stats()["not_supported"] == 1


def test_throttle_by_topic_and_by_principal(channel: NoticeChannel) -> None:
    a, b = Client(channel.address, "a"), Client(channel.address, "b")
    a.send(protocol.register_producer(1, "t1", "User:alice"),
           protocol.register_producer(2, "t2", "User:alice"))
    b.send(protocol.register_producer(5, "t1", "User:bob"), protocol.register_producer(6, "t2"))
    registered(channel, 4)
    by_topic = channel.throttle(reason=TOPIC, pause_ms=300, topic="t1")
    assert {(n.client_id, n.producer_id, n.topic) for n in by_topic} == {("a", 1, "t1"), ("b", 5, "t1")}
    [na], [nb] = a.notices(1), b.notices(1)
    assert (na.request_id, na.producer_id, na.throttling_reason, na.pause_for_millis) == (1, 1, TOPIC, 300)
    assert (nb.request_id, nb.producer_id) == (1, 5)
    by_principal = channel.throttle(reason=Reason.ResourceGroupProduceQuotaExceeded, pause_ms=7,
                                    principal="User:alice")
    # request ids go on per connection
    assert [(n.producer_id, n.request_id) for n in by_principal] == [(1, 2), (2, 3)]
    assert [(n.producer_id, n.request_id) for n in a.notices(2)] == [(1, 2), (2, 3)]
    both = channel.throttle(reason=TOPIC, pause_ms=1, topic="t2", principal="User:alice")
    assert [(n.client_id, n.producer_id) for n in both] == [("a", 2)]
    everyone_but_alice = channel.throttle(reason=Reason.BrokerProduceQuotaExceeded, pause_ms=1,
                                          exclude_principals={"User:alice"})
    assert [(n.client_id, n.producer_id, n.request_id) for n in everyone_but_alice] == [
        ("b", 5, 2), ("b", 6, 3)]
    assert sample(channel, "quotaplane_notices_sent_total", reason="TopicProduceQuotaExceeded",
                  topic="t1") == 2
    assert sample(channel, "quotaplane_notices_sent_total", reason="ResourceGroupProduceQuotaExceeded",
                  topic="t2") == 1
    assert channel.stats()["sent"] == 7


def test_receipts_in_time_late_and_absent(channel: NoticeChannel, clock: list[float]) -> None:
    client = Client(channel.address)
    client.send(*(protocol.register_producer(i, "t") for i in (1, 2, 3)))
    registered(channel, 3)
    assert len(channel.throttle(reason=TOPIC, pause_ms=0, topic="t")) == 3
    client.notices(3)
    clock[0] += 0.1  # exactly the wait: in time (inclusive)
    client.send(protocol.throttle_receipt(1))
    until(lambda: channel.stats()["in_time"] == 1)
    clock[0] += 0.05  # past the window: 2 and 3 are overdue, not yet absent
    stats = channel.stats()
    assert (stats["outstanding"], stats["overdue"], stats["absent"]) == (2, 2, 0)
    assert sample(channel, "quotaplane_notice_receipts_outstanding", window="passed") == 2
    client.send(protocol.throttle_receipt(2))
    until(lambda: channel.stats()["late"] == 1)
    clock[0] += 0.0501  # past the give-up time (2 x the wait, the pause being 0)
    assert channel.stats()["absent"] == 1
    client.send(protocol.throttle_receipt(3))  # after it was given up: it settles nothing
    until(lambda: channel.stats()["duplicate"] == 1)
    assert {o: sample(channel, "quotaplane_notice_receipts_total", outcome=o)
            for o in ("in_time", "late", "absent")} == {"in_time": 1, "late": 1, "absent": 1}
    assert sample(channel, "quotaplane_notice_receipt_latency_seconds_count") == 2
    assert sample(channel, "quotaplane_notice_receipt_latency_seconds_sum") == pytest.approx(0.25)
    assert sample(channel, "quotaplane_notice_receipt_latency_seconds_bucket", le="0.1") == 1
    assert channel.stats()["outstanding"] == 0


def test_a_long_pause_waits_for_a_late_receipt_until_it_ends(channel: NoticeChannel,
                                                              clock: list[float]) -> None:
    client = Client(channel.address)
    client.send(protocol.register_producer(1, "t"))
    registered(channel, 1)
    channel.throttle(reason=TOPIC, pause_ms=5000, topic="t")
    client.notices(1)
    clock[0] += 4.9
    assert channel.stats()["absent"] == 0
    client.send(protocol.throttle_receipt(1))
    until(lambda: channel.stats()["late"] == 1)


def test_wait_receipts_returns_once_every_notice_is_answered(clock: list[float]) -> None:
    with NoticeChannel(receipt_wait_ms=1000) as ch:
        client = Client(ch.address)
        client.send(protocol.register_producer(1, "t"))
        registered(ch, 1)
        ch.throttle(reason=TOPIC, pause_ms=10, topic="t")
        assert not ch.wait_receipts(0.02)
        client.send(protocol.throttle_receipt(client.notices(1)[0].request_id))
        assert ch.wait_receipts(1.0)
        assert ch.stats()["in_time"] == 1


def test_duplicate_and_unknown_request_receipts_are_counted_and_the_peer_stays(
        channel: NoticeChannel) -> None:
    client = Client(channel.address)
    client.send(protocol.register_producer(1, "t"))
    registered(channel, 1)
    channel.throttle(reason=TOPIC, pause_ms=10, topic="t")
    client.notices(1)
    client.send(protocol.throttle_receipt(1), protocol.throttle_receipt(1), protocol.throttle_receipt(99),
                protocol.throttle_receipt(0))
    until(lambda: channel.stats()["unknown_request"] == 2)
    stats = channel.stats()
    assert (stats["in_time"], stats["duplicate"], stats["connections"]) == (1, 1, 1)
    assert sample(channel, "quotaplane_notice_receipts_total", outcome="unknown_request") == 2
    assert sample(channel, "quotaplane_notice_receipts_total", outcome="duplicate") == 1
    channel.throttle(reason=TOPIC, pause_ms=10, topic="t")
    assert client.notices(1)[0].request_id == 2


def test_garbage_disconnects_the_peer_and_the_channel_goes_on(channel: NoticeChannel) -> None:
    bad = Client(channel.address)
    bad.sock.sendall(b"GET / HTTP/1.1\r\n\r\n")
    assert bad.closed_by_server()
    until(lambda: channel.stats()["connections"] == 0)
    stats = channel.stats()
    assert stats["protocol_errors"]["malformed"] == 1
    assert "frame total size" in str(stats["last_protocol_error"])
    assert sample(channel, "quotaplane_notice_channel_protocol_errors_total", kind="malformed") == 1
    good = Client(channel.address)
    good.send(protocol.register_producer(1, "t"))
    registered(channel, 1)
    assert len(channel.throttle(reason=TOPIC, pause_ms=1)) == 1


def _with_unknown_reason() -> bytes:
    body = protocol.throttle_producer(1, 2, Reason.BrokerProduceQuotaExceeded, 5).SerializeToString()
    body = body.replace(b"\x20\x04", b"\x20\x07")  # throttling_reason = 7
    return len(body).to_bytes(4, "big").join([(4 + len(body)).to_bytes(4, "big"), body])


@pytest.mark.parametrize(("connect", "data", "kind", "message"), [
    (True, b"\x00\x00\x00\x03\x00\x00\x00\x05", "malformed", "command size 5 is not total size 3 - 4"),
    (True, b"\x00\x00\x00\x07\x00\x00\x00\x03\xff\xff\xff", "malformed", "not a NoticeCommand"),
    (True, _with_unknown_reason(), "malformed", "throttle_producer.throttling_reason"),
    (False, protocol.frame(protocol.register_producer(1, "t")), "unexpected",
     "REGISTER_PRODUCER before CONNECT"),
    (True, protocol.frame(protocol.connect("again", True)), "unexpected", "already connected as 'c'"),
    (True, protocol.frame(protocol.connected(5)), "unexpected", "CONNECTED: a server's command"),
    (True, protocol.frame(protocol.throttle_producer(1, 1, TOPIC, 1)), "unexpected", "THROTTLE_PRODUCER"),
    (True, protocol.frame(protocol.register_producer(1, "")), "unexpected", "register_producer.topic=''"),
    (True, protocol.frame(protocol.register_producer(1, "a"))
     + protocol.frame(protocol.register_producer(1, "b")),
     "unexpected", "register_producer.producer_id=1: already registered"),
])
def test_a_peer_that_breaks_the_protocol_is_counted_and_disconnected(
        channel: NoticeChannel, connect: bool, data: bytes, kind: str, message: str) -> None:
    client = Client(channel.address, "c" if connect else None)
    client.sock.sendall(data)
    assert client.closed_by_server()
    until(lambda: channel.stats()["protocol_errors"][kind] == 1)  # type: ignore[index]
    assert message in str(channel.stats()["last_protocol_error"])


def test_the_same_registration_twice_is_accepted(channel: NoticeChannel) -> None:
    client = Client(channel.address)
    client.send(protocol.register_producer(1, "t", "User:a"), protocol.register_producer(1, "t", "User:a"))
    registered(channel, 1)
    assert len(channel.throttle(reason=TOPIC, pause_ms=1)) == 1


def test_bad_throttle_arguments_are_the_caller_s_value_errors(channel: NoticeChannel) -> None:
    with pytest.raises(ValueError, match="pause_ms=-1: must be an integer"):
        channel.throttle(reason=TOPIC, pause_ms=-1)
    with pytest.raises(ValueError, match=r"reason=9: not a CommandThrottleProducer\.ThrottlingReason"):
        channel.throttle(reason=9, pause_ms=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="receipt_wait_ms=-5"):
        NoticeChannel(receipt_wait_ms=-5)


def test_a_client_that_disconnects_mid_pause(channel: NoticeChannel, clock: list[float]) -> None:
    paused, idle = Client(channel.address, "paused"), Client(channel.address, "idle")
    paused.send(protocol.register_producer(1, "t"))
    registered(channel, 1)
    channel.throttle(reason=TOPIC, pause_ms=1000, topic="t")
    paused.notices(1)
    clock[0] += 0.5
    paused.close()  # no receipt, the pause in force
    idle.close()
    until(lambda: channel.stats()["disconnects"] == 2)
    stats = channel.stats()
    assert (stats["disconnects_during_pause"], stats["absent"], stats["connections"]) == (1, 1, 0)
    assert sample(channel, "quotaplane_notice_channel_disconnects_total", during_pause="true") == 1
    assert sample(channel, "quotaplane_notice_channel_disconnects_total", during_pause="false") == 1
    assert channel.throttle(reason=TOPIC, pause_ms=1) == []


def test_a_peer_that_reads_nothing_is_dropped_not_waited_for(channel: NoticeChannel, monkeypatch) -> None:
    monkeypatch.setattr(notice_channel, "MAX_UNSENT", 64 * 1024)
    client = Client(channel.address, rcvbuf=4096)
    client.send(*(protocol.register_producer(i, "t") for i in range(100)))
    registered(channel, 100)
    started = time.monotonic()
    for _ in range(5000):  # ~2 KB of notices per call, never read
        channel.throttle(reason=TOPIC, pause_ms=1)
        if channel.stats()["protocol_errors"]["unread"]:  # type: ignore[index]
            break
    assert channel.stats()["protocol_errors"]["unread"] == 1  # type: ignore[index]
    assert time.monotonic() - started < 1.5  # throttle never blocks on a peer
    until(lambda: channel.stats()["connections"] == 0)


def test_many_clients(channel: NoticeChannel) -> None:
    clients = [Client(channel.address, f"c{i}") for i in range(50)]
    for i, client in enumerate(clients):
        client.send(protocol.register_producer(1, f"t{i % 5}"), protocol.register_producer(2, "shared"))
    registered(channel, 100)
    sent = channel.throttle(reason=TOPIC, pause_ms=20)
    assert len(sent) == 100 and {n.request_id for n in sent} == {1, 2}
    for client in clients:
        got = client.notices(2)
        client.send(*(protocol.throttle_receipt(n.request_id) for n in got))
    until(lambda: channel.stats()["in_time"] == 100)
    assert sample(channel, "quotaplane_notices_sent_total", reason="TopicProduceQuotaExceeded",
                  topic="shared") == 50
    assert sample(channel, "quotaplane_notice_channel_producers") == 100
    for client in clients:
        client.close()
    until(lambda: channel.stats()["connections"] == 0)
    assert sample(channel, "quotaplane_notice_channel_producers") == 0


def test_stop_closes_everything_and_settles_what_is_outstanding() -> None:
    before = set(threading.enumerate())
    ch = NoticeChannel(receipt_wait_ms=100)
    ch.start()
    client = Client(ch.address)
    client.send(protocol.register_producer(1, "t"))
    registered(ch, 1)
    ch.throttle(reason=TOPIC, pause_ms=60_000)
    ch.stop()
    ch.stop()  # idempotent
    assert client.notices(1)[0].request_id == 1 and client.closed_by_server()
    assert set(threading.enumerate()) == before
    assert (ch.stats()["absent"], ch.stats()["connections"], ch.stats()["disconnects"]) == (1, 0, 0)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(ch.address, timeout=1)
    with pytest.raises(RuntimeError, match="already started"):
        ch.start()


def test_a_port_in_use_is_an_error_naming_it() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=f"--notice-port=127.0.0.1:{port}: cannot listen"):
            NoticeChannel(port=port).start()


def test_promtool_accepts_the_channel_metrics(channel: NoticeChannel, tmp_path: Path) -> None:
    promtool = tools.promtool()
    client = Client(channel.address)
    client.send(protocol.register_producer(1, "t"))
    registered(channel, 1)
    channel.throttle(reason=TOPIC, pause_ms=1)
    client.send(protocol.throttle_receipt(client.notices(1)[0].request_id))
    until(lambda: channel.stats()["in_time"] == 1)
    result = subprocess.run([promtool, "check", "metrics"], input=generate_latest(channel.registry).decode(),
                            capture_output=True, text=True, timeout=30, check=False)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


# --- the service


CONFIG = {f"{S}storage.volume.source": "cluster", f"{S}storage.check-interval": "1000",
          f"{S}storage.perVolumeLimit.availableBytesBelow.soft": "400",
          f"{S}storage.perVolumeLimit.availableBytesBelow.hard": "100",
          f"{S}produce": "1000", f"{S}excluded.principal.name.list": "User:admin"}


class _Broken:
    def throttle(self, **_: object) -> list[object]:
        raise OSError("the channel is gone")


def test_the_service_survives_a_failing_channel(tmp_path: Path) -> None:
    from quotaplane.live.metrics import LiveStatus

    config = parse_storage_config(CONFIG)
    svc = Service([], [], {}, LiveStatus("c"), Options(2.5), notices=_Broken(),  # type: ignore[arg-type]
                  excluded_principals=config.excluded_principals, log=io.StringIO())
    assert svc.notify(1.0) == 0
    assert svc.notify(0.5) == "OSError: the channel is gone"


def test_the_service_notifies_every_producer_but_the_excluded_while_the_factor_is_below_1(
        channel: NoticeChannel) -> None:
    from quotaplane.live.metrics import LiveStatus

    config = parse_storage_config(CONFIG)
    svc = Service([], [], {}, LiveStatus("c"), Options(2.5), notices=channel,
                  excluded_principals=config.excluded_principals)
    client = Client(channel.address)
    client.send(protocol.register_producer(1, "t1", "User:alice"),
                protocol.register_producer(2, "t2", "admin"),
                protocol.register_producer(3, "t3", "User:admin"), protocol.register_producer(4, "t4"))
    registered(channel, 4)
    assert svc.notify(1.0) == 0
    assert svc.notify(0.5) == 2
    got = client.notices(2)
    assert [(n.producer_id, n.throttling_reason, n.pause_for_millis) for n in got] == [
        (1, Reason.BrokerProduceQuotaExceeded, 2500), (4, Reason.BrokerProduceQuotaExceeded, 2500)]


def _telemetry(root: Path, full: int, cut: int) -> None:
    """Rounds one second apart: `full` rounds at factor 1, then `cut` at 0.5 (250 of 1000 available,
    soft 400, hard 100)."""
    rows = [{"ts": 1_700_000_000_000 + i * 1000, "cluster": "c", "broker_id": 1, "log_dir": "/d",
             "total_bytes": 1000, "available_bytes": 1000 if i < full else 250, "poll_id": i}
            for i in range(full + cut)]
    (root / "volumes").mkdir(parents=True)
    (root / "volumes" / "part-0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_replay_sends_notices_while_the_factor_is_below_1(tmp_path: Path, capsys) -> None:
    _telemetry(tmp_path / "telemetry", full=5, cut=4)
    config = tmp_path / "storage.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in CONFIG.items()))
    port = _free_port()
    got: list[pb.CommandThrottleProducer] = []

    def producer() -> None:
        deadline = time.monotonic() + 10
        while True:
            try:
                client = Client(("127.0.0.1", port), "app")
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.01)
        client.send(protocol.register_producer(1, "orders", "User:alice"),
                    protocol.register_producer(2, "audit", "User:admin"),
                    protocol.register_producer(3, "logs"))
        client.sock.settimeout(10)
        try:
            while True:
                command = client.recv()
                got.append(command.throttle_producer)
                client.send(protocol.throttle_receipt(command.throttle_producer.request_id))
        except (AssertionError, OSError):  # the service stopped (closed, or reset under a receipt)
            return

    thread = threading.Thread(target=producer)
    thread.start()
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        code = main(["serve", "--replay", str(tmp_path / "telemetry"), "--config", str(config),
                     "--speed", "5", "--metrics-port", "0", "--notice-port", str(port)])
    finally:
        for s, handler in handlers.items():
            signal.signal(s, handler)
        thread.join(5)
    assert code == 0
    err = capsys.readouterr().err
    assert f"notice channel on 127.0.0.1:{port}" in err
    log = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert [(r["throttle_factor"], r["notices_sent"]) for r in log] == [(1.0, 0)] * 5 + [(0.5, 2)] * 4
    assert [(n.producer_id, n.throttling_reason, n.pause_for_millis) for n in got] == [
        (p, Reason.BrokerProduceQuotaExceeded, 1000) for _ in range(4) for p in (1, 3)]
    assert [n.request_id for n in got] == list(range(1, 9))


@pytest.mark.parametrize(("extra", "message"), [
    (["--notice-port", "70000"], "--notice-port=70000: must be a TCP port, 0..65535"),
    (["--notice-port", "0", "--notice-receipt-wait-ms", "-1"],
     "--notice-receipt-wait-ms=-1: must be 0..3600000"),
    (["--notice-port", "TAKEN"], "--notice-port=127.0.0.1:TAKEN: cannot listen"),
])
def test_bad_notice_options_exit_2_with_one_line(tmp_path: Path, capsys, extra: list[str],
                                                 message: str) -> None:
    _telemetry(tmp_path / "telemetry", full=1, cut=0)
    config = tmp_path / "storage.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in CONFIG.items()))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        code = main(["serve", "--replay", str(tmp_path / "telemetry"), "--config", str(config),
                     "--metrics-port", "0", *[port if e == "TAKEN" else e for e in extra]])
    err = capsys.readouterr().err
    assert code == 2 and message.replace("TAKEN", port) in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
