"""The growth of each partition replica over the fit window: retention- and replication-aware.

docs/forecast.md, "Partition growth". A replica's size grows as its partition is written and
drops by whole segments when retention deletes them; once a partition is at its retention limit
(`retention.bytes` or `retention.ms`) its size no longer trends upwards however much is written,
so the raw slope (which a sawtooth of segment deletes bends either way) is not its growth:

- its points are read over the history (`ForecastSettings.history_ms`, the longer of the fit window
  and the lookback, 24 h by default): a segment cycle is often longer than the fit window;
- a replica with no drop in the history (`size_i < size_{i-1}` for consecutive points) is still
  filling: its growth is the trend of its points in the fit window
  (`quotaplane.forecast.engine.trend`), `rate` and `recent`;
- a replica with drops is at its retention limit: its size is measured at its troughs (the first
  point after each drop). With `first`, `last` and `mid` troughs (`mid`: the last at or before the
  middle of the first and the last, as in `trend`), `whole` is the slope from the first to the last,
  `early` from the first to `mid`, `late` from `mid` to the last. When the troughs rise in both
  halves (`early > 0` and `late > 0`: sustained growth, a topic whose writes keep growing), the
  growth is `late + (late - early) / 2` when accelerating (`late >= early`: the late slope
  extrapolated from the late half's middle to now) with the acceleration
  `(late - early) / ((t_last - t_first) / 2)` per second, else `late`; otherwise (a swing, or flat)
  it is `whole`; the acceleration is 0 but for sustained accelerating growth. `recent` is
  `whole`. With a single trough, or no `mid` strictly inside, the growth is `whole` (0 for one
  trough);
- replication: every replica of a partition grows with its leader. When a replica marked
  `is_leader` (at its last point in the window) is seen, the partition's replicas all take the
  leader's growth; when several are marked (leadership moved), the one seen last, then the lowest
  (broker_id, log_dir). Without a marked leader each replica keeps its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Any

from quotaplane.forecast.engine.trend import midpoint_ms, per_second, trend

ReplicaKey = tuple[str, int, str, str, int]  # cluster, broker_id, log_dir, topic, partition


@dataclass(frozen=True, slots=True)
class ReplicaPoint:
    """One `partition_sizes` row (docs/telemetry.md)."""

    ts_ms: int
    cluster: str
    broker_id: int
    log_dir: str
    topic: str
    partition: int
    size_bytes: int
    is_leader: bool | None = None

    @property
    def key(self) -> ReplicaKey:
        return (self.cluster, self.broker_id, self.log_dir, self.topic, self.partition)

    @classmethod
    def from_record(cls, row: Mapping[str, Any]) -> ReplicaPoint:
        """A typed `partition_sizes` record (as the readers give it) as a point."""
        return cls(row["ts"], row["cluster"], row["broker_id"], row["log_dir"], row["topic"],
                   row["partition"], row["size_bytes"], row.get("is_leader"))

    def as_record(self) -> dict[str, Any]:
        """The `partition_sizes` record, its fields in the schema's order."""
        return {"ts": self.ts_ms, "cluster": self.cluster, "broker_id": self.broker_id,
                "log_dir": self.log_dir, "topic": self.topic, "partition": self.partition,
                "size_bytes": self.size_bytes, "is_leader": self.is_leader}


@dataclass(frozen=True, slots=True)
class ReplicaGrowth:
    cluster: str
    broker_id: int
    log_dir: str
    topic: str
    partition: int
    size_bytes: int  # at its last point in the window
    last_ts_ms: int
    drops: int
    rate: float  # bytes per second
    recent: float
    is_leader: bool
    acceleration: float = 0.0  # bytes per second, per second


def series(points: Iterable[ReplicaPoint]) -> dict[ReplicaKey, list[ReplicaPoint]]:
    """Points by replica, in time order, one per time (the largest size when a time repeats)."""
    by_key: dict[ReplicaKey, dict[int, ReplicaPoint]] = {}
    for p in points:
        at = by_key.setdefault(p.key, {})
        kept = at.get(p.ts_ms)
        if kept is None or (p.size_bytes, p.is_leader is True) > (kept.size_bytes, kept.is_leader is True):
            at[p.ts_ms] = p
    return {k: [at[t] for t in sorted(at)] for k, at in by_key.items()}


def replica_growth(points: Sequence[ReplicaPoint], window_start_ms: int | None = None) -> ReplicaGrowth:
    """The growth of one replica from its time-ordered points of the history; the fit window is
    `ts > window_start_ms` (None: all of them)."""
    last = points[-1]
    troughs = [(b.ts_ms, b.size_bytes) for a, b in pairwise(points) if b.size_bytes < a.size_bytes]
    acceleration = 0.0
    if troughs:
        rate, recent, acceleration = _trough_growth(troughs)
    else:
        window = [(p.ts_ms, p.size_bytes) for p in points
                  if window_start_ms is None or p.ts_ms > window_start_ms]
        fitted = trend(window) if window else None
        rate = fitted.rate if fitted is not None and fitted.rate is not None else 0.0
        recent = fitted.recent if fitted is not None and fitted.recent is not None else 0.0
    return ReplicaGrowth(last.cluster, last.broker_id, last.log_dir, last.topic, last.partition,
                         last.size_bytes, last.ts_ms, len(troughs), rate, recent, last.is_leader is True,
                         acceleration)


def _trough_growth(troughs: Sequence[tuple[int, int]]) -> tuple[float, float, float]:
    """(growth, the lookback's slope, acceleration) of a replica at its retention limit, from its
    troughs."""
    (t0, v0), (t1, v1) = troughs[0], troughs[-1]
    if t1 <= t0:
        return 0.0, 0.0, 0.0
    whole = per_second(v1 - v0, t1 - t0)
    middle = midpoint_ms(t0, t1)
    tm, vm = max((t for t in troughs if t[0] <= middle), key=lambda t: t[0])
    if tm <= t0 or tm >= t1:
        return whole, whole, 0.0
    first, second = per_second(vm - v0, tm - t0), per_second(v1 - vm, t1 - tm)
    if first > 0.0 and second > 0.0:
        if second >= first:
            return second + (second - first) / 2.0, whole, (second - first) / ((t1 - t0) / 2000.0)
        return second, whole, 0.0
    return whole, whole, 0.0


def growths(points: Iterable[ReplicaPoint], window_start_ms: int | None = None) -> list[ReplicaGrowth]:
    """Every replica's growth, followers taking their partition leader's (module docstring)."""
    own = [replica_growth(s, window_start_ms) for s in series(points).values()]
    leaders: dict[tuple[str, str, int], ReplicaGrowth] = {}
    for g in own:
        if not g.is_leader:
            continue
        key = (g.cluster, g.topic, g.partition)
        kept = leaders.get(key)
        if kept is None or (-g.last_ts_ms, g.broker_id, g.log_dir) < (-kept.last_ts_ms, kept.broker_id,
                                                                       kept.log_dir):
            leaders[key] = g
    out = []
    for g in own:
        leader = leaders.get((g.cluster, g.topic, g.partition))
        out.append(g if leader is None else replace(g, rate=leader.rate, recent=leader.recent,
                                                    acceleration=leader.acceleration))
    return out
