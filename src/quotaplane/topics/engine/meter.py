"""The Yammer 2.2 meter's one-minute rate, ticked in event time.

spec: kafka-topic-bytes-in-quota (Low level design, 2): the observed bytes-in rate is a Meter's
OneMinuteRate, an EWMA refreshed every 5 s. Yammer metrics-core 2.2.0 `EWMA.tick()`:

    instant = uncounted / 5e9              # per nanosecond; the counter is reset
    rate    = instant                      # first tick
    rate   += alpha * (instant - rate)     # later ticks, alpha = 1 - e^(-5/60)
    getOneMinuteRate() = rate * 1e9        # bytes per second

Event time: a meter created at `c` ticks at `c + 5 s * k` for k >= 1 (the executor's first run is one
period after scheduling); `advance(t)` applies every tick at or before `t`, so a request at a tick's
exact time sees that tick. Before the first tick the rate reads 0.0.
"""

from __future__ import annotations

import math

TICK_MS = 5_000
TICK_NANOS = 5e9  # the EWMA interval as a double, in nanoseconds (`TimeUnit.SECONDS.toNanos(5)`)
NANOS_PER_SECOND = 1e9  # `rateUnit.toNanos(1)` for a per-second rate
M1_ALPHA = 1 - math.exp(-5 / 60.0 / 1)  # 0.0799555853706767


def tick_rate(rate: float, initialized: bool, count: int) -> float:
    """One `EWMA.tick()`: the new per-nanosecond rate after `count` units were marked."""
    instant = count / TICK_NANOS
    if initialized:
        return rate + M1_ALPHA * (instant - rate)
    return instant


class Meter:
    """One meter (count and one-minute rate) created at `created_ms`, ticked by `advance`."""

    __slots__ = ("count", "created_ms", "initialized", "next_tick_ms", "rate", "uncounted")

    def __init__(self, created_ms: int) -> None:
        self.created_ms = created_ms
        self.next_tick_ms = created_ms + TICK_MS
        self.rate = 0.0  # per nanosecond
        self.initialized = False
        self.uncounted = 0
        self.count = 0

    def advance(self, now_ms: int) -> None:
        """Apply every tick at or before `now_ms`, in order.

        Once nothing is left uncounted, the remaining ticks only decay the rate; they run in a tight
        loop that stops early when the rate reaches a fixed point of the recurrence (the decrement
        rounds to zero, at a few subnormal values at most): later idle ticks would leave it unchanged,
        so the result is the same as ticking them one by one.
        """
        if self.next_tick_ms > now_ms:
            return
        due = (now_ms - self.next_tick_ms) // TICK_MS + 1
        self.next_tick_ms += due * TICK_MS
        if self.uncounted or not self.initialized:
            self.rate = tick_rate(self.rate, self.initialized, self.uncounted)
            self.initialized, self.uncounted = True, 0
            due -= 1
        rate = self.rate
        for _ in range(due):
            decayed = rate + M1_ALPHA * (0.0 - rate)  # tick_rate(rate, True, 0)
            if decayed == rate:
                break
            rate = decayed
        self.rate = rate

    def mark(self, n: int) -> None:
        """Record `n` units (bytes) now: counted at the next tick."""
        self.uncounted += n
        self.count += n

    def one_minute_rate(self) -> float:
        """`getOneMinuteRate()` in units per second, as of the last `advance`."""
        return self.rate * NANOS_PER_SECOND
