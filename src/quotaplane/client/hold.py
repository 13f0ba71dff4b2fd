"""The hold rule: which messages wait for a throttled topic, when they go, when they fail.

docs/notices.md, section "The producer"; PIP-385 "Blocking messages to be sent during throttling" and
"Client side rate limit exception":

- a `ThrottleProducer` command for a topic, received at `t`, throttles it until `t + pause_for_millis`;
  a later command for the topic replaces that end (it extends or shortens the pause);
- while a topic is throttled, or while messages it held are still queued, its messages are held in
  order; when the pause ends they are sent in the order they were produced;
- a held message fails with `ProducerThrottledError` instead of being sent when the time it was held
  over its send timeout is above 80% (strict); a send timeout of 0 means none (Pulsar's meaning).

Times come from an injectable clock (seconds, `time.monotonic` by default) and are compared in whole
microseconds, so a hold of exactly 80% is not a failure whatever the float arithmetic.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from quotaplane.client.errors import ProducerThrottledError
from quotaplane.notices.protocol import Reason

Clock = Callable[[], float]
THROTTLED_SHARE = 0.8  # PIP-385: throttled time / sendTimeout > 80% raises ProducerThrottledException


def exceeds(held_s: float, send_timeout_ms: int) -> bool:
    """`held / send_timeout > 0.8` in whole microseconds; never with a send timeout of 0."""
    return send_timeout_ms > 0 and round(held_s * 1_000_000) * 5 > send_timeout_ms * 4_000


@dataclass
class Held:
    """One message waiting for its topic: `send` sends it, `fail` reports an error instead."""

    since: float
    send_timeout_ms: int
    send: Callable[[], None]
    fail: Callable[[Exception], None]


@dataclass
class _Topic:
    pause_end: float | None = None
    reason: Reason = Reason.TopicProduceQuotaExceeded
    queue: deque[Held] = field(default_factory=deque)


class Hold:
    """Per-topic pauses and queues of held messages; thread-safe.

    `send` is called under the hold's lock (so released messages keep their order), `fail` after it
    is released. `send` may raise `BufferError` (the underlying producer's queue is full): the message
    stays at the head of its queue and is retried at the next `pump`. Any other exception fails it.
    """

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.RLock()
        self._topics: dict[str, _Topic] = {}
        self._failed: list[tuple[Held, Exception]] = []

    def throttle(self, topic: str, reason: Reason, pause_ms: int) -> float:
        """Throttle `topic` for `pause_ms` from now (replacing any pause); the new end."""
        with self._lock:
            now = self._clock()
            self._pump(topic, now)
            state = self._topics.setdefault(topic, _Topic())
            state.pause_end, state.reason = now + pause_ms / 1000, reason
            self._pump(topic, now)
        self._report()
        return now + pause_ms / 1000

    def submit(self, topic: str, send_timeout_ms: int, send: Callable[[], None],
               fail: Callable[[Exception], None]) -> bool:
        """Send now (True; `send`'s exceptions go to the caller) or hold behind the topic (False)."""
        try:
            with self._lock:
                now = self._clock()
                self._pump(topic, now)
                state = self._topics.get(topic)
                if state is None:
                    send()
                    return True
                state.queue.append(Held(now, send_timeout_ms, send, fail))
                return False
        finally:
            self._report()

    def pump(self) -> None:
        """Fail the held messages past the 80% rule, release those whose pause ended."""
        with self._lock:
            now = self._clock()
            for topic in list(self._topics):
                self._pump(topic, now)
        self._report()

    def _report(self) -> None:
        """Call `fail` of the messages failed under the lock, outside it."""
        with self._lock:
            failed, self._failed = self._failed, []
        for held, error in failed:
            held.fail(error)

    def _pump(self, topic: str, now: float) -> None:
        state = self._topics.get(topic)
        if state is None:
            return
        if state.pause_end is not None:
            # A message's hold lasts until now, or until the pause's end if that has passed.
            horizon = min(now, state.pause_end)
            kept: deque[Held] = deque()
            for held in state.queue:
                if exceeds(horizon - held.since, held.send_timeout_ms):
                    self._failed.append((held, ProducerThrottledError(
                        topic, state.reason, (horizon - held.since) * 1000, held.send_timeout_ms)))
                else:
                    kept.append(held)
            state.queue = kept
            if now >= state.pause_end:
                state.pause_end = None
        if state.pause_end is None:
            while state.queue:
                held = state.queue[0]
                try:
                    held.send()
                except BufferError:
                    break
                except Exception as e:
                    self._failed.append((held, e))
                state.queue.popleft()
            if not state.queue:
                del self._topics[topic]

    def next_deadline(self) -> float | None:
        """The next clock time at which `pump` has something to do, if any message is held."""
        with self._lock:
            deadlines = []
            for state in self._topics.values():
                if not state.queue:
                    continue
                if state.pause_end is None:  # a full producer queue: retry soon
                    deadlines.append(self._clock() + 0.05)
                    continue
                deadlines.append(state.pause_end)
                deadlines.extend(held.since + held.send_timeout_ms * THROTTLED_SHARE / 1000
                                 for held in state.queue if held.send_timeout_ms > 0)
            return min(deadlines, default=None)

    def is_throttled(self, topic: str) -> bool:
        with self._lock:
            state = self._topics.get(topic)
            return state is not None and state.pause_end is not None and self._clock() < state.pause_end

    def throttled_until(self, topic: str) -> float | None:
        """The clock time the topic's pause ends, while it is throttled."""
        with self._lock:
            return self._topics[topic].pause_end if self.is_throttled(topic) else None

    def held(self, topic: str | None = None) -> int:
        """Messages held (for one topic, or all)."""
        with self._lock:
            if topic is not None:
                state = self._topics.get(topic)
                return 0 if state is None else len(state.queue)
            return sum(len(state.queue) for state in self._topics.values())
