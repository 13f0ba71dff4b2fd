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

from dataclasses import dataclass


@dataclass
class _Sample:
    start_ms: int
    last_event_ms: int
    value: int = 0

    def reset(self, now: int) -> None:
        self.start_ms = now
        self.last_event_ms = now
        self.value = 0


class SampledRate:
    """One rate sensor: `record(value, t)`, then `measure(t)` in units per second."""

    def __init__(self, samples: int, window_ms: int) -> None:
        if samples < 1 or window_ms < 1:
            raise ValueError("samples and window_ms must be at least 1")
        self.samples = samples
        self.window_ms = window_ms
        self._slots: list[_Sample] = []
        self._current = 0

    def record(self, value: int, t: int) -> None:
        """`SampledStat.record`: advance when the current sample is complete, then add."""
        sample = self._current_sample(t)
        if t - sample.start_ms >= self.window_ms:
            sample = self._advance(t)
        sample.value += value
        sample.last_event_ms = t

    def _current_sample(self, t: int) -> _Sample:
        if not self._slots:
            self._slots.append(_Sample(t, t))
        return self._slots[self._current]

    def _advance(self, t: int) -> _Sample:
        self._current = (self._current + 1) % (self.samples + 1)
        if self._current >= len(self._slots):
            sample = _Sample(t, t)
            self._slots.append(sample)
            return sample
        sample = self._slots[self._current]
        sample.reset(t)
        return sample

    def purge(self, now: int) -> None:
        """Reset every sample with no event in the last `samples * window` ms (`>=` expires)."""
        expire_age = self.samples * self.window_ms
        for sample in self._slots:
            if now - sample.last_event_ms >= expire_age:
                sample.reset(now)

    def total(self, now: int) -> int:
        """`WindowedSum.measure`: purge, then the sum over all slots."""
        self.purge(now)
        return sum(sample.value for sample in self._slots)

    def window_size(self, now: int) -> int:
        """`Rate.windowSize`: the precise window in ms the rate is divided by."""
        self.purge(now)
        if not self._slots:
            self._slots.append(_Sample(now, now))
        oldest = min(sample.start_ms for sample in self._slots)
        elapsed = now - oldest
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
