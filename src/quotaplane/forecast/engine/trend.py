"""The growth of one series over the fit window: over the whole window and over its second half.

For points `(t_i, v_i)` in `(at - window, at]`, in time order (docs/forecast.md, "Trend"):

- `first` and `last` are the first and last points; `mid` is the last point at or before
  `t_first + (t_last - t_first) // 2` (integer milliseconds);
- `rate = (v_last - v_first) * 1000 / (t_last - t_first)` per second, the net change over the window;
- `recent = (v_last - v_mid) * 1000 / (t_last - t_mid)`, the net change over its second half;
- a single point (or all points at one time) has no trend: both are None.

The Spark twin (`quotaplane.forecast.spark.trend`) computes the same with the same operations.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Trend:
    last_ts_ms: int
    last: int
    rate: float | None
    recent: float | None


def per_second(delta: int, span_ms: int) -> float:
    """`delta * 1000 / span_ms` as a double, in this order (both engines)."""
    return float(delta * 1000) / float(span_ms)


def midpoint_ms(first_ms: int, last_ms: int) -> int:
    return first_ms + (last_ms - first_ms) // 2


def trend(points: Sequence[tuple[int, int]]) -> Trend:
    """The trend of `points` (time-ordered `(ts_ms, value)`, at least one)."""
    t0, v0 = points[0]
    t1, v1 = points[-1]
    if t1 <= t0:
        return Trend(t1, v1, None, None)
    middle = midpoint_ms(t0, t1)
    tm, vm = max((p for p in points if p[0] <= middle), key=lambda p: p[0])
    return Trend(t1, v1, per_second(v1 - v0, t1 - t0), per_second(v1 - vm, t1 - tm))
