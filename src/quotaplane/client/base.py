"""What every notice-aware producer shares: its notice connection, the hold, the metrics and the
timer thread that releases held messages when their pause ends (docs/notices.md, "The producer")."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from quotaplane.client.hold import Clock, Hold
from quotaplane.client.metrics import ClientMetrics, default_metrics
from quotaplane.client.notices import Address, NoticeConnection
from quotaplane.notices.protocol import Reason

PULSAR_SEND_TIMEOUT_MS = 30_000  # Pulsar's `ProducerConfigurationData.sendTimeoutMs` default
_MAX_WAIT_S = 0.5


class NoticeAwareProducer:
    """The notice side of a producer: one producer id per topic, registered on first use.

    `notices` is the channel's address (the producer opens and owns a `NoticeConnection`), a
    `NoticeConnection` shared with other producers (not closed by `close`), or None (no channel:
    only `throttle` throttles). `clock` (seconds) drives the hold rule; with `background=False` no
    timer thread runs and held messages move only when `pump`, `poll`, `flush` or `produce` run.
    """

    def __init__(self, *, notices: Address | NoticeConnection | None, send_timeout_ms: int,
                 principal: str | None, client_id: str, clock: Clock, metrics: ClientMetrics | None,
                 background: bool) -> None:
        self.send_timeout_ms = check_send_timeout(send_timeout_ms)
        self.principal = principal
        self._clock = clock
        self._hold = Hold(clock)
        self._producer_ids: dict[str, int] = {}
        self._ids_lock = threading.Lock()
        self._callbacks: deque[Callable[[], None]] = deque()
        if isinstance(notices, NoticeConnection):
            self.notices: NoticeConnection | None = notices
            self._owns_notices = False
            self.metrics = metrics if metrics is not None else notices.metrics
        else:
            self.metrics = metrics if metrics is not None else default_metrics()
            self.notices = None if notices is None else NoticeConnection(
                notices, client_id=client_id, metrics=self.metrics).start()
            self._owns_notices = notices is not None
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self._timer: threading.Thread | None = None
        if background:
            self._timer = threading.Thread(target=self._run_timer, name=f"hold-{client_id}", daemon=True)
            self._timer.start()

    def register_topic(self, topic: str) -> int | None:
        """The producer id of `topic`, registered on the notice channel the first time."""
        with self._ids_lock:
            producer_id = self._producer_ids.get(topic)
            if producer_id is None and self.notices is not None:
                producer_id = self.notices.add_producer(
                    topic, lambda reason, pause_ms: self.throttle(topic, reason, pause_ms), self.principal)
                self._producer_ids[topic] = producer_id
            return producer_id

    def throttle(self, topic: str, reason: Reason, pause_ms: int) -> None:
        """Apply a `ThrottleProducer` command for `topic`: held until now + `pause_ms` (replacing the
        end of a pause in force), counted in `throttled_times{reason, topic}`."""
        self._hold.throttle(topic, reason, pause_ms)
        self.metrics.throttled(reason.name, topic)
        self._wake.set()

    def is_throttled(self, topic: str) -> bool:
        """Whether `topic` is in a pause (PIP-385's `Producer.isThrottled()`)."""
        return self._hold.is_throttled(topic)

    def throttled_until(self, topic: str) -> float | None:
        """The clock time at which the pause of `topic` ends, while it is throttled."""
        return self._hold.throttled_until(topic)

    def held(self, topic: str | None = None) -> int:
        """Messages held (of `topic`, or of every topic)."""
        return self._hold.held(topic)

    def pump(self) -> None:
        """Release the messages whose pause ended and fail those past the 80% rule, now."""
        self._hold.pump()

    def close(self) -> None:
        """Stop the timer thread and the notice connection (when this producer opened it)."""
        self._stopping.set()
        self._wake.set()
        if self._timer is not None:
            self._timer.join(5)
        if self._owns_notices and self.notices is not None:
            self.notices.stop()

    def _serve_callbacks(self) -> int:
        served = 0
        while self._callbacks:
            self._callbacks.popleft()()
            served += 1
        return served

    def _run_timer(self) -> None:
        while not self._stopping.is_set():
            self._wake.clear()
            self._hold.pump()
            deadline = self._hold.next_deadline()
            wait = _MAX_WAIT_S if deadline is None else max(0.0, deadline - self._clock()) + 0.001
            self._wake.wait(min(wait, _MAX_WAIT_S))


def check_send_timeout(send_timeout_ms: int) -> int:
    if isinstance(send_timeout_ms, bool) or not isinstance(send_timeout_ms, int) or send_timeout_ms < 0:
        raise ValueError(f"send_timeout_ms={send_timeout_ms!r}: must be an integer >= 0 (0: no send timeout)")
    return send_timeout_ms


def monotonic_deadline(timeout: float | None) -> float | None:
    return None if timeout is None or timeout < 0 else time.monotonic() + timeout


def remaining(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())
