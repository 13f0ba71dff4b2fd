"""The client's notice connection (docs/notices.md, "The notice channel" and "The producer").

A background thread keeps one TCP connection to a notice channel (`quotaplane serve --notice-port`):
it sends CONNECT with `supports_throttle_producer_commands=true` and one REGISTER_PRODUCER per
producer (id, topic, principal), receives THROTTLE_PRODUCER commands, hands each to its producer's
handler and answers with THROTTLE_PRODUCER_RECEIPT at once (PIP-385: the broker waits
`throttleProducerReceiptWaitTimeMillis` for it). When the connection drops it reconnects with
exponential backoff and registers every producer again.

A bad command never stops the thread: it is counted (`ClientMetrics.errors`) and ignored, with no
receipt, so the broker falls back to pausing the connection as it does without notices:
an unknown reason, a pause above 2^63 - 1 ms (a negative pause written as int64), an unknown producer
id, an unexpected command type or an unparsable command. A duplicate request id (on one connection)
is answered again but not applied again. A frame whose header breaks the framing (sizes that do not
agree, above `MAX_FRAME_SIZE`) cannot be skipped: the client reconnects.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from google.protobuf.message import DecodeError

from quotaplane.client.metrics import ClientMetrics, default_metrics
from quotaplane.notices import notices_pb2 as pb
from quotaplane.notices.protocol import (
    MAX_FRAME_SIZE,
    ProtocolError,
    Reason,
    connect,
    frame,
    parse,
    register_producer,
    throttle_receipt,
)

log = logging.getLogger(__name__)
Address = tuple[str, int]
ThrottleHandler = Callable[[Reason, int], None]
_SIZE = struct.Struct(">I")
_INT64_MAX = (1 << 63) - 1
_SEEN_REQUEST_IDS = 4096  # request ids remembered per connection to tell duplicates
_CONNECTION_FAULTS = frozenset({"connect_failed", "disconnected"})


@dataclass(frozen=True)
class _Producer:
    topic: str
    principal: str | None
    on_throttle: ThrottleHandler


class NoticeConnection:
    """One client's connection to the notice channel, run by a daemon thread (`start`/`stop`)."""

    def __init__(self, address: Address, *, client_id: str = "quotaplane-client",
                 metrics: ClientMetrics | None = None, backoff_s: float = 0.05, max_backoff_s: float = 2.0,
                 connect_timeout_s: float = 2.0) -> None:
        self.address = address
        self.client_id = client_id
        self.metrics = metrics if metrics is not None else default_metrics()
        self._backoff_s, self._max_backoff_s = backoff_s, max_backoff_s
        self._connect_timeout_s = connect_timeout_s
        self._lock = threading.Lock()
        self._producers: dict[int, _Producer] = {}
        self._next_id = 0
        self._sock: socket.socket | None = None
        self._seen: deque[int] = deque(maxlen=_SEEN_REQUEST_IDS)
        self._stopping = threading.Event()
        self._connected = threading.Event()
        self._thread: threading.Thread | None = None
        self.sessions = 0  # connections that reached CONNECTED
        self.receipt_wait_ms: int | None = None

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> NoticeConnection:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"notices-{self.client_id}", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stopping.set()
        with self._lock:
            self._close(self._sock)
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    def wait_connected(self, timeout: float | None = None) -> bool:
        """Whether the channel answered CONNECT (now or within `timeout` seconds)."""
        return self._connected.wait(timeout)

    # -- producers --------------------------------------------------------------------------------

    def add_producer(self, topic: str, on_throttle: ThrottleHandler, principal: str | None = None) -> int:
        """Register a producer of `topic`; its id (0, 1, ... per connection, as Pulsar's client)."""
        with self._lock:
            producer_id = self._next_id
            self._next_id += 1
            self._producers[producer_id] = _Producer(topic, principal, on_throttle)
            self._send(frame(register_producer(producer_id, topic, principal)))
        return producer_id

    def producers(self) -> dict[int, str]:
        with self._lock:
            return {producer_id: p.topic for producer_id, p in self._producers.items()}

    # -- the thread -------------------------------------------------------------------------------

    def _run(self) -> None:
        backoff = self._backoff_s
        while not self._stopping.is_set():
            try:
                sock = socket.create_connection(self.address, timeout=self._connect_timeout_s)
            except OSError as e:
                self._error("connect_failed", f"notice channel {self.address}: {e}")
            else:
                sessions = self.sessions
                try:
                    self._session(sock)
                except (OSError, ConnectionError) as e:
                    if not self._stopping.is_set():
                        self._error("disconnected", f"notice channel {self.address}: {e}")
                except ProtocolError as e:
                    self._error("framing", f"notice channel {self.address}: {e}")
                finally:
                    self._connected.clear()
                    with self._lock:
                        self._sock = None
                    self._close(sock)
                if self.sessions > sessions:
                    backoff = self._backoff_s
            self._stopping.wait(backoff)
            backoff = min(backoff * 2, self._max_backoff_s)

    def _session(self, sock: socket.socket) -> None:
        sock.settimeout(None)
        with self._lock:
            if self._stopping.is_set():
                return
            self._seen.clear()
            registrations = [frame(register_producer(pid, p.topic, p.principal))
                             for pid, p in self._producers.items()]
            sock.sendall(frame(connect(self.client_id, True)) + b"".join(registrations))
            self._sock = sock
        buffer = bytearray()
        while True:
            data = sock.recv(65536)
            if not data:
                raise ConnectionError("closed by the channel")
            buffer.extend(data)
            for body in _cut(buffer):
                self._handle(body)

    def _handle(self, body: bytes) -> None:
        try:
            command = parse(body)
        except ProtocolError as e:
            self._error(_classify(body), str(e))
            return
        if command.type == pb.NoticeCommand.CONNECTED:
            connected = command.connected
            if connected.HasField("throttle_producer_receipt_wait_time_millis"):
                self.receipt_wait_ms = connected.throttle_producer_receipt_wait_time_millis
            self.sessions += 1
            self._connected.set()
        elif command.type == pb.NoticeCommand.THROTTLE_PRODUCER:
            self._throttle(command.throttle_producer)
        else:
            self._error("unexpected_command", f"{pb.NoticeCommand.Type.Name(command.type)} from the channel")

    def _throttle(self, command: pb.CommandThrottleProducer) -> None:
        request_id, producer_id = command.request_id, command.producer_id
        reason = Reason(command.throttling_reason)
        if command.pause_for_millis > _INT64_MAX:
            self._error("negative_pause", f"request {request_id}: pause_for_millis "
                        f"{command.pause_for_millis - (1 << 64)} for producer {producer_id} ({reason.name})")
            return
        with self._lock:
            duplicate = request_id in self._seen
            self._seen.append(request_id)
            producer = self._producers.get(producer_id)
        if duplicate:
            self._error("duplicate_request_id", f"request {request_id} again (producer {producer_id}, "
                        f"{reason.name}): acknowledged, not applied again")
        elif producer is None:
            self._error("unknown_producer",
                        f"request {request_id}: no producer {producer_id} ({reason.name})")
            return
        else:
            try:
                producer.on_throttle(reason, command.pause_for_millis)
            except Exception:
                log.exception("the throttle handler of topic %r failed (%s)", producer.topic, reason.name)
                self._error("handler_failed", f"request {request_id}, topic {producer.topic!r}")
                return
        with self._lock:
            self._send(frame(throttle_receipt(request_id)))

    def _send(self, data: bytes) -> None:
        """Send on the current connection, if any (under `_lock`); a failure is the reader's to see."""
        if self._sock is None:
            return
        try:
            self._sock.sendall(data)
        except OSError as e:
            log.debug("notice channel send failed: %s", e)

    def _error(self, error: str, detail: str) -> None:
        self.metrics.error(error)
        level = logging.INFO if error in _CONNECTION_FAULTS else logging.WARNING
        log.log(level, "notice %s: %s", error, detail)

    @staticmethod
    def _close(sock: socket.socket | None) -> None:
        if sock is None:
            return
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()


def _cut(buffer: bytearray) -> list[bytes]:
    """The complete frames' command bodies at the head of `buffer` (removed from it).

    Raises `ProtocolError` when a header breaks the framing (the stream can no longer be read).
    """
    bodies = []
    while len(buffer) >= 8:
        total, size = _SIZE.unpack_from(buffer, 0)[0], _SIZE.unpack_from(buffer, 4)[0]
        if total > MAX_FRAME_SIZE:
            raise ProtocolError(f"frame total size {total} above {MAX_FRAME_SIZE}")
        if size != total - 4:
            raise ProtocolError(f"command size {size} is not total size {total} - 4")
        if len(buffer) < 4 + total:
            break
        bodies.append(bytes(buffer[8:4 + total]))
        del buffer[:4 + total]
    return bodies


def _classify(body: bytes) -> str:
    """Why a frame's command was refused: `unknown_reason` (a THROTTLE_PRODUCER whose reason this
    client does not know: proto2 keeps it as an unknown field) or `malformed`."""
    command = pb.NoticeCommand()
    try:
        command.ParseFromString(body)
    except DecodeError:
        return "malformed"
    throttle = command.throttle_producer
    if (command.type == pb.NoticeCommand.THROTTLE_PRODUCER and command.HasField("throttle_producer")
            and not throttle.HasField("throttling_reason") and throttle.HasField("request_id")
            and throttle.HasField("producer_id") and throttle.HasField("pause_for_millis")):
        return "unknown_reason"
    return "malformed"
