"""The notice channel of the live service (`quotaplane serve --notice-port`).

docs/notices.md "The notice channel"; spec: pip-385-producer-throttle-protocol (New binary protocol
commands). Producers connect over TCP, send `CONNECT` with their feature flags (the server answers
`CONNECTED` with its receipt wait time) and `REGISTER_PRODUCER` for each producer (id, topic,
principal); `throttle` sends `THROTTLE_PRODUCER` to the matching producers of the connections that
announced `supports_throttle_producer_commands`, and each answers with `THROTTLE_PRODUCER_RECEIPT`.

Each notice gets exactly one receipt outcome (latency = arrival - send, on `clock`):

- `in_time`: a receipt with latency <= `receipt_wait_ms` (inclusive: the broker waits that long);
- `late`: a receipt after the wait window, before the notice is given up;
- `absent`: no receipt when the notice is given up: `max(2 x receipt_wait_ms, pause_for_millis)`
  after it was sent (after that the producer resumes anyway), when its connection closes, or when
  the channel stops.

A notice past its window and not yet answered nor given up is *overdue* (the point where a PIP-385
broker falls back to pausing reads): `quotaplane_notice_receipts_outstanding{window="passed"}`.
Receipts that settle no notice are counted too: `unknown_request` (a request id never sent on that
connection) and `duplicate` (sent, but already settled: answered before, or given up as absent).

A peer that breaks the format or the flow is disconnected and counted in
`quotaplane_notice_channel_protocol_errors_total{kind}`; nothing a peer sends stops the channel.
One background thread runs a selector loop over non-blocking sockets; `throttle` writes from the
caller's thread under the channel's lock, so a notice is on the wire when it returns (unless the
peer's socket buffer is full: the rest follows from the loop).
"""

from __future__ import annotations

import contextlib
import errno
import heapq
import math
import selectors
import socket
import sys
import threading
import time
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from quotaplane.core.errors import ConfigError
from quotaplane.notices import notices_pb2 as pb
from quotaplane.notices import protocol
from quotaplane.notices.protocol import FrameReader, ProtocolError, Reason

OUTCOMES = ("in_time", "late", "absent", "unknown_request", "duplicate")
# malformed: a frame or command that breaks the format; unexpected: a well-formed command the server
# does not take at that point; unread: the peer left more than MAX_UNSENT bytes of notices unread;
# internal: the channel failed on the peer's input (a bug: printed, the channel goes on).
ERROR_KINDS = ("malformed", "unexpected", "unread", "internal")
MAX_UNSENT = 1 << 20
SEND_BUFFER = 64 * 1024  # the kernel's send buffer per connection (SO_SNDBUF): notices are ~20 bytes
UINT64_MAX = (1 << 64) - 1
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_ACCEPT, _WAKE = "accept", "wake"
# How long the loop waits before accepting again when the process is out of file descriptors.
ACCEPT_BACKOFF_S = 0.1


@dataclass(frozen=True)
class SentNotice:
    """One `CommandThrottleProducer` the channel sent."""

    connection_id: int
    client_id: str
    producer_id: int
    request_id: int
    topic: str
    principal: str | None
    reason: Reason
    pause_ms: int
    sent_at: float  # on the channel's clock


@dataclass
class _Pending:
    notice: SentNotice
    window_end: float
    give_up: float
    overdue: bool = False


class _Unexpected(Exception):
    """A well-formed command the server does not take at that point of the flow."""


@dataclass(eq=False)
class _Connection:
    id: int
    sock: socket.socket
    reader: FrameReader = field(default_factory=FrameReader)
    out: bytearray = field(default_factory=bytearray)
    client_id: str | None = None  # set by CONNECT
    supports: bool = False
    producers: dict[int, tuple[str, str | None]] = field(default_factory=dict)
    next_request: int = 1
    pending: dict[int, _Pending] = field(default_factory=dict)
    paused_until: float = -math.inf
    failed: tuple[str, str] | None = None  # (kind, message): to be closed by the loop


class _Metrics(Collector):
    """The channel's families, read from its counts at every scrape (no `_created` samples, like
    quotaplane's other metrics; docs/metrics.md "Notice channel")."""

    def __init__(self, channel: NoticeChannel) -> None:
        self.channel = channel
        self.buckets = sorted(set(LATENCY_BUCKETS) | ({channel._wait_s} if channel._wait_s > 0 else set()))

    def collect(self) -> Iterator[Metric]:
        ch = self.channel
        with ch._lock:
            ch._sweep(ch.clock())
            counts, sent = Counter(ch._counts), Counter(ch._sent)
            latencies = list(ch._latency_buckets)
            latency_sum = ch._latency_sum
            outstanding, overdue = ch._outstanding, ch._overdue
            connections = len(ch._connections)
            producers = sum(len(c.producers) for c in ch._connections.values())
        family = CounterMetricFamily("quotaplane_notices_sent", "ThrottleProducer notices sent, by reason "
                                     "and topic.", labels=["reason", "topic"])
        for (reason, topic), n in sorted(sent.items()):
            family.add_metric([reason, topic], n)
        yield family
        family = CounterMetricFamily("quotaplane_notice_receipts", "Notice receipt outcomes (in_time, late, "
                                     "absent: one per notice; unknown_request, duplicate: receipts that "
                                     "settle none).", labels=["outcome"])
        for outcome in OUTCOMES:
            family.add_metric([outcome], counts[outcome])
        yield family
        cumulative, total = [], 0
        for bound, n in zip([*self.buckets, math.inf], latencies, strict=True):
            total += n
            cumulative.append((floatToGoString(bound), total))
        yield HistogramMetricFamily("quotaplane_notice_receipt_latency_seconds",
                                    "From a notice to its receipt (in time or late).", buckets=cumulative,
                                    sum_value=latency_sum)
        family = GaugeMetricFamily("quotaplane_notice_receipts_outstanding", "Notices awaiting a receipt, "
                                   "by whether their wait window has passed.", labels=["window"])
        family.add_metric(["open"], outstanding - overdue)
        family.add_metric(["passed"], overdue)
        yield family
        yield GaugeMetricFamily("quotaplane_notice_channel_connections", "Open notice channel connections.",
                                value=connections)
        yield GaugeMetricFamily("quotaplane_notice_channel_producers",
                                "Producers registered on open connections.", value=producers)
        family = CounterMetricFamily("quotaplane_notice_channel_protocol_errors", "Peers disconnected for "
                                     "breaking the channel's protocol, by kind.", labels=["kind"])
        for kind in ERROR_KINDS:
            family.add_metric([kind], counts[f"error_{kind}"])
        yield family
        family = CounterMetricFamily("quotaplane_notice_channel_disconnects", "Connections closed by the "
                                     "peer, by whether a pause it was sent was in force.",
                                     labels=["during_pause"])
        family.add_metric(["true"], counts["disconnects_during_pause"])
        family.add_metric(["false"], counts["disconnects"] - counts["disconnects_during_pause"])
        yield family


def _reason(value: Reason | int) -> Reason:
    try:
        return Reason(value)
    except ValueError:
        raise ValueError(f"reason={value!r}: not a CommandThrottleProducer.ThrottlingReason "
                         f"({', '.join(f'{r.value}={r.name}' for r in Reason)}; PIP-385)") from None


class NoticeChannel:
    """The TCP server of the notice channel (module docstring; docs/notices.md)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, receipt_wait_ms: int = 100,
                 clock: Callable[[], float] = time.monotonic,
                 registry: CollectorRegistry | None = None) -> None:
        if isinstance(receipt_wait_ms, bool) or not isinstance(receipt_wait_ms, int) \
                or not 0 <= receipt_wait_ms <= UINT64_MAX:
            raise ValueError(f"receipt_wait_ms={receipt_wait_ms!r}: must be an integer >= 0 "
                             "(throttleProducerReceiptWaitTimeMillis)")
        self.host, self.port = host, port
        self.receipt_wait_ms = receipt_wait_ms
        self._wait_s = receipt_wait_ms / 1000
        self.clock = clock
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._connections: dict[int, _Connection] = {}
        self._next_connection = 1
        self._counts: Counter[str] = Counter()
        self._deadlines: list[tuple[float, int, int, int]] = []  # (time, connection id, request id, seq)
        self._seq = 0
        self._outstanding = 0
        self._overdue = 0
        self._sent: Counter[tuple[str, str]] = Counter()  # (reason name, topic)
        self._last_error: str | None = None
        self._server: socket.socket | None = None
        self._address: tuple[str, int] | None = None
        self._selector: selectors.BaseSelector | None = None
        self._wake_r: socket.socket | None = None
        self._wake_w: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._metrics = _Metrics(self)
        self._latency_buckets = [0] * (len(self._metrics.buckets) + 1)  # the last: +Inf
        self._latency_sum = 0.0
        self.registry = registry if registry is not None else CollectorRegistry()
        self.registry.register(self._metrics)

    # --- life cycle

    def start(self) -> None:
        """Bind, listen and start the loop; a `ConfigError` naming the address when it cannot listen."""
        if self._thread is not None or self._stopping:
            raise RuntimeError("the notice channel was already started")
        try:
            family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
            server = socket.create_server((self.host, self.port), family=family, backlog=128)
        except OSError as exc:
            raise ConfigError("--notice-port", f"{self.host}:{self.port}",
                              f"cannot listen: {exc.strerror or exc}") from None
        server.setblocking(False)
        self._server = server
        host, port = server.getsockname()[:2]
        self._address = (str(host), int(port))
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(server, selectors.EVENT_READ, _ACCEPT)
        self._selector.register(self._wake_r, selectors.EVENT_READ, _WAKE)
        self._thread = threading.Thread(target=self._run, name="quotaplane-notices", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Close every connection (their unanswered notices become `absent`) and the listener; waits
        for the loop thread. Idempotent."""
        with self._lock:
            if self._thread is None or self._stopping:
                return
            self._stopping = True
        self._wake()
        self._thread.join()

    def __enter__(self) -> NoticeChannel:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def address(self) -> tuple[str, int]:
        """The bound (host, port)."""
        if self._address is None:
            raise RuntimeError("the notice channel is not started")
        return self._address

    # --- sending

    def throttle(self, *, reason: Reason, pause_ms: int, topic: str | None = None,
                 principal: str | None = None, exclude_principals: Collection[str] = ()) -> list[SentNotice]:
        """Send `CommandThrottleProducer` to every registered producer whose topic is `topic` and whose
        principal is `principal` (each when given), except producers whose principal is in
        `exclude_principals`, on the connections that announced `supports_throttle_producer_commands`.
        Request ids are per connection, increasing from 1. Returns the notices sent."""
        reason = _reason(reason)
        if isinstance(pause_ms, bool) or not isinstance(pause_ms, int) or not 0 <= pause_ms <= UINT64_MAX:
            raise ValueError(f"pause_ms={pause_ms!r}: must be an integer in 0..2^64-1 "
                             "(pause_for_millis is a uint64)")
        excluded = frozenset(exclude_principals)
        sent: list[SentNotice] = []
        by_topic: Counter[str] = Counter()
        with self._lock:
            now = self.clock()
            for conn in sorted(self._connections.values(), key=lambda c: c.id):
                if conn.failed is not None or conn.client_id is None:
                    continue
                for producer_id, (t, p) in sorted(conn.producers.items()):
                    if (topic is not None and t != topic) or (principal is not None and p != principal) \
                            or (p is not None and p in excluded):
                        continue
                    if not conn.supports:
                        self._counts["not_supported"] += 1
                        continue
                    notice = SentNotice(conn.id, conn.client_id, producer_id, conn.next_request, t, p,
                                        reason, pause_ms, now)
                    conn.next_request += 1
                    conn.out += protocol.frame(protocol.throttle_producer(
                        notice.request_id, producer_id, reason, pause_ms))
                    give_up = now + max(2 * self._wait_s, pause_ms / 1000)
                    pending = _Pending(notice, now + self._wait_s, give_up)
                    conn.pending[notice.request_id] = pending
                    self._outstanding += 1
                    for deadline in (pending.window_end, pending.give_up):
                        self._seq += 1
                        heapq.heappush(self._deadlines, (deadline, conn.id, notice.request_id, self._seq))
                    conn.paused_until = max(conn.paused_until, now + pause_ms / 1000)
                    by_topic[t] += 1
                    sent.append(notice)
                if conn.out:
                    self._flush(conn)
            for t, n in by_topic.items():
                self._sent[reason.name, t] += n
            self._counts["sent"] += len(sent)
        if sent:
            self._wake()
        return sent

    # --- observing

    def wait_receipts(self, timeout_s: float) -> bool:
        """Block until every notice sent so far is settled or past its wait window, at most
        `timeout_s` (real time); True when it is."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                self._sweep(self.clock())
                if self._outstanding == self._overdue:
                    return True
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(min(remaining, 0.01))

    def stats(self) -> dict[str, object]:
        """Counters and gauges of the channel (the metrics' values, plus `not_supported`: matching
        producers skipped because their connection did not announce the flag)."""
        with self._lock:
            self._sweep(self.clock())
            out: dict[str, object] = {
                "connections": len(self._connections),
                "producers": sum(len(c.producers) for c in self._connections.values()),
                "sent": self._counts["sent"],
                **{outcome: self._counts[outcome] for outcome in OUTCOMES},
                "outstanding": self._outstanding,
                "overdue": self._overdue,
                "protocol_errors": {kind: self._counts[f"error_{kind}"] for kind in ERROR_KINDS},
                "disconnects": self._counts["disconnects"],
                "disconnects_during_pause": self._counts["disconnects_during_pause"],
                "not_supported": self._counts["not_supported"],
                "last_protocol_error": self._last_error,
            }
        return out

    # --- the loop (its own thread; the only one that touches the selector or closes sockets)

    def _run(self) -> None:
        assert self._selector is not None
        try:
            while True:
                with self._lock:
                    if self._stopping:
                        break
                    self._sweep(self.clock())
                    self._rearm()
                    timeout = 0.02 if self._deadlines else 1.0
                for key, mask in self._selector.select(timeout):
                    try:
                        self._event(key, mask)
                    except Exception as exc:  # never let one peer's input end the loop
                        conn = key.data if isinstance(key.data, _Connection) else None
                        print(f"notice channel: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
                        if conn is not None:
                            with self._lock:
                                self._fail(conn, "internal", f"{type(exc).__name__}: {exc}")
        finally:
            self._shutdown()

    def _event(self, key: selectors.SelectorKey, mask: int) -> None:
        if key.data == _ACCEPT:
            self._accept()
        elif key.data == _WAKE:
            assert self._wake_r is not None
            try:
                while self._wake_r.recv(4096):
                    pass
            except OSError:
                pass
        else:
            conn: _Connection = key.data
            if mask & selectors.EVENT_READ:
                self._read(conn)
            if mask & selectors.EVENT_WRITE:
                with self._lock:
                    if conn.id in self._connections:
                        self._flush(conn)

    def _accept(self) -> None:
        assert self._server is not None and self._selector is not None
        while True:
            try:
                sock, _ = self._server.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # the peer gave up before the accept (ECONNABORTED), out of descriptors
                if exc.errno in (errno.EMFILE, errno.ENFILE):
                    time.sleep(ACCEPT_BACKOFF_S)  # the listener stays readable: back off, do not spin
                return
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
            with self._lock:
                conn = _Connection(self._next_connection, sock)
                self._next_connection += 1
                self._connections[conn.id] = conn
                self._selector.register(sock, selectors.EVENT_READ, conn)

    def _read(self, conn: _Connection) -> None:
        try:
            data = conn.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        with self._lock:
            if conn.id not in self._connections or conn.failed is not None:
                return
            if not data:
                self._close(conn, by_peer=True)
                return
            try:
                for command in conn.reader.feed(data):
                    self._handle(conn, command)
            except ProtocolError as exc:
                self._fail(conn, "malformed", str(exc))
            except _Unexpected as exc:
                self._fail(conn, "unexpected", str(exc))
            self._changed.notify_all()

    def _handle(self, conn: _Connection, command: pb.NoticeCommand) -> None:
        kind = command.type
        if kind == pb.NoticeCommand.CONNECT:
            if conn.client_id is not None:
                raise _Unexpected(f"CONNECT: connection {conn.id} already connected as {conn.client_id!r} "
                                  "(one CONNECT per connection)")
            conn.client_id = command.connect.client_id
            conn.supports = command.connect.feature_flags.supports_throttle_producer_commands
            conn.out += protocol.frame(protocol.connected(self.receipt_wait_ms))
            self._flush(conn)
            return
        if conn.client_id is None:
            raise _Unexpected(f"{pb.NoticeCommand.Type.Name(kind)} before CONNECT (CONNECT comes first)")
        if kind == pb.NoticeCommand.REGISTER_PRODUCER:
            reg = command.register_producer
            if not reg.topic:
                raise _Unexpected("register_producer.topic='': must not be empty")
            entry = (reg.topic, reg.principal if reg.HasField("principal") else None)
            known = conn.producers.get(reg.producer_id)
            if known is not None and known != entry:
                raise _Unexpected(f"register_producer.producer_id={reg.producer_id}: already registered on "
                                  f"this connection as topic={known[0]!r} principal={known[1]!r} "
                                  "(a producer id is unique per connection)")
            conn.producers[reg.producer_id] = entry
        elif kind == pb.NoticeCommand.THROTTLE_PRODUCER_RECEIPT:
            self._receipt(conn, command.throttle_producer_receipt.request_id)
        else:
            raise _Unexpected(f"{pb.NoticeCommand.Type.Name(kind)}: a server's command, not a producer's")

    def _receipt(self, conn: _Connection, request_id: int) -> None:
        now = self.clock()
        self._sweep(now)
        pending = conn.pending.get(request_id)
        if pending is None:
            self._count("duplicate" if 1 <= request_id < conn.next_request else "unknown_request")
            return
        latency = round(max(now - pending.notice.sent_at, 0.0), 9)  # to the ns: no float residue
        self._settle(conn, pending, "in_time" if latency <= self._wait_s else "late")
        self._latency_buckets[bisect_left(self._metrics.buckets, latency)] += 1
        self._latency_sum += latency

    def _count(self, outcome: str) -> None:
        self._counts[outcome] += 1

    def _sweep(self, now: float) -> None:
        """Mark notices past their window overdue; settle those past their give-up time as absent."""
        while self._deadlines and self._deadlines[0][0] < now:
            _, conn_id, request_id, _ = heapq.heappop(self._deadlines)
            conn = self._connections.get(conn_id)
            pending = conn.pending.get(request_id) if conn is not None else None
            if conn is None or pending is None:
                continue  # settled already
            if now > pending.give_up:
                self._settle(conn, pending, "absent")
            elif not pending.overdue:
                pending.overdue = True
                self._overdue += 1

    def _settle(self, conn: _Connection, pending: _Pending, outcome: str) -> None:
        del conn.pending[pending.notice.request_id]
        self._outstanding -= 1
        self._overdue -= pending.overdue
        self._count(outcome)

    def _flush(self, conn: _Connection) -> None:
        """Write what the socket takes now (under the lock); the loop writes the rest."""
        if conn.failed is not None:
            return
        try:
            n = conn.sock.send(conn.out)
        except (BlockingIOError, InterruptedError):
            n = 0
        except OSError as exc:
            conn.failed = ("", f"send: {exc.strerror or exc}")  # the peer is gone: closed by the loop
            return
        del conn.out[:n]
        if len(conn.out) > MAX_UNSENT:
            self._fail(conn, "unread", f"{len(conn.out)} bytes of notices unread (at most {MAX_UNSENT})")

    def _fail(self, conn: _Connection, kind: str, message: str) -> None:
        """Count a protocol error; the loop disconnects the peer."""
        if conn.failed is not None:
            return
        conn.failed = (kind, message)
        self._counts[f"error_{kind}"] += 1
        self._last_error = f"connection {conn.id} ({conn.client_id or 'not connected'}): {message}"
        if threading.current_thread() is self._thread:
            self._close(conn, by_peer=False)

    def _rearm(self) -> None:
        """Close failed connections; watch for writability where notices wait to be written."""
        assert self._selector is not None
        for conn in list(self._connections.values()):
            if conn.failed is not None:
                self._close(conn, by_peer=conn.failed[0] == "")
                continue
            events = selectors.EVENT_READ | (selectors.EVENT_WRITE if conn.out else 0)
            if self._selector.get_key(conn.sock).events != events:
                self._selector.modify(conn.sock, events, conn)

    def _close(self, conn: _Connection, by_peer: bool) -> None:
        if self._connections.pop(conn.id, None) is None:
            return
        now = self.clock()
        for pending in list(conn.pending.values()):
            self._settle(conn, pending, "absent")
        if by_peer:
            during = now < conn.paused_until
            self._counts["disconnects"] += 1
            self._counts["disconnects_during_pause"] += during
        assert self._selector is not None
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(conn.sock)
        conn.sock.close()
        self._changed.notify_all()

    def _wake(self) -> None:
        wake = self._wake_w
        if wake is not None:
            with contextlib.suppress(OSError):  # full (a wake-up is pending) or closed (stopped)
                wake.send(b"\0")

    def _shutdown(self) -> None:
        with self._lock:
            for conn in list(self._connections.values()):
                self._flush(conn)
                try:  # the peer reads what was sent, then the end (not a reset under unread input)
                    conn.sock.shutdown(socket.SHUT_WR)
                    while conn.sock.recv(65536):
                        pass
                except OSError:
                    pass
                self._close(conn, by_peer=False)
            assert self._selector is not None and self._server is not None
            self._selector.close()
            self._server.close()
            for sock in (self._wake_r, self._wake_w):
                if sock is not None:
                    sock.close()
            self._wake_w = None
