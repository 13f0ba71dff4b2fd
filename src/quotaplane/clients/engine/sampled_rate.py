"""Kafka's `Rate` over a `WindowedSum` `SampledStat`, as in Kafka 3.8 and later.

spec: Kafka `SampledStat`, `Rate`. `samples + 1` slots in a ring: a record
goes into the current sample unless that sample is complete (`t - start >= window`), in which case
the next slot is reset to start at `t`. Measuring first purges every sample whose last event is at
least `samples * window` old (reset to start now), then divides the sum of all slots by the window
`now - oldest start`, padded to `samples - 1` whole windows when fewer have elapsed, at least 1 ms.

Values are kept as Python integers (bytes, nanoseconds, mutations), so sums are exact; Kafka's
doubles give the same sums for whole numbers below 2^53.
"""

from __future__ import annotations


class SampledRate:
    """One rate sensor: `record(value, t)`, then `measure(t)` in units per second. Slot i of the
    ring is (`_starts[i]`, `_lasts[i]`, `_values[i]`): its start, its last event and its sum."""

    def __init__(self, samples: int, window_ms: int) -> None:
        if samples < 1 or window_ms < 1:
            raise ValueError("samples and window_ms must be at least 1")
        self.samples = samples
        self.window_ms = window_ms
        self._starts: list[int] = []
        self._lasts: list[int] = []
        self._values: list[int] = []
        self._current = 0

    def record(self, value: int, t: int) -> None:
        """`SampledStat.record`: advance when the current sample is complete, then add."""
        if not self._starts:
            self._new_slot(t)
        current = self._current
        if t - self._starts[current] >= self.window_ms:
            current = self._advance(t)
        self._values[current] += value
        self._lasts[current] = t

    def _new_slot(self, t: int) -> None:
        self._starts.append(t)
        self._lasts.append(t)
        self._values.append(0)

    def _reset(self, slot: int, now: int) -> None:
        self._starts[slot] = now
        self._lasts[slot] = now
        self._values[slot] = 0

    def _advance(self, t: int) -> int:
        self._current = (self._current + 1) % (self.samples + 1)
        if self._current >= len(self._starts):
            self._new_slot(t)
        else:
            self._reset(self._current, t)
        return self._current

    def purge(self, now: int) -> None:
        """Reset every sample with no event in the last `samples * window` ms (`>=` expires)."""
        oldest_allowed = now - self.samples * self.window_ms
        if self._lasts and min(self._lasts) <= oldest_allowed:
            for slot, last in enumerate(self._lasts):
                if last <= oldest_allowed:
                    self._reset(slot, now)

    def total(self, now: int) -> int:
        """`WindowedSum.measure`: purge, then the sum over all slots."""
        self.purge(now)
        return sum(self._values)

    def window_size(self, now: int) -> int:
        """`Rate.windowSize`: the precise window in ms the rate is divided by."""
        self.purge(now)
        if not self._starts:
            self._new_slot(now)
        elapsed = now - min(self._starts)
        full_windows = elapsed // self.window_ms
        min_full_windows = self.samples - 1
        if full_windows < min_full_windows:
            elapsed += (min_full_windows - full_windows) * self.window_ms
        return max(elapsed, 1)

    def measure(self, now: int, scale: float = 1.0) -> tuple[float, int]:
        """The rate per second at `now` and the window it used; `scale` converts the summed units
        (1.0 for bytes and mutations, `NANOS_TO_PERCENTAGE_PER_SECOND` for request time)."""
        total = self.total(now)
        window = self.window_size(now)
        summed = float(total) if scale == 1.0 else float(total) * scale
        return summed / (window / 1000.0), window
