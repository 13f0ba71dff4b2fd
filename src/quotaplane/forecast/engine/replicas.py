"""The growth of each partition replica over the fit window: retention- and replication-aware.

docs/forecast.md, "Partition growth". A replica's size grows as its partition is written and
drops by whole segments when retention deletes them; once a partition is at its retention limit
(`retention.bytes` or `retention.ms`) its size no longer trends upwards however much is written,
so the raw slope (which a sawtooth of segment deletes bends either way) is not its growth:

- a replica with no drop in the window (`size_i < size_{i-1}` for consecutive points) is still
  filling: its growth is the window's trend (`quotaplane.forecast.engine.trend`), `rate` and `recent`;
- a replica with drops is at its retention limit: its size is measured at its troughs (the first
  point after each drop), and its growth is the slope between the first and the last trough
  (`rate` and `recent` alike); with a single trough it is 0;
- replication: every replica of a partition grows with its leader. When a replica marked
  `is_leader` (at its last point in the window) is seen, the partition's replicas all take the
  leader's growth; when several are marked (leadership moved), the one seen last, then the lowest
  (broker_id, log_dir). Without a marked leader each replica keeps its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise

from quotaplane.forecast.engine.trend import per_second, trend

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


def series(points: Iterable[ReplicaPoint]) -> dict[ReplicaKey, list[ReplicaPoint]]:
    """Points by replica, in time order, one per time (the largest size when a time repeats)."""
    by_key: dict[ReplicaKey, dict[int, ReplicaPoint]] = {}
    for p in points:
        at = by_key.setdefault(p.key, {})
        kept = at.get(p.ts_ms)
        if kept is None or (p.size_bytes, p.is_leader is True) > (kept.size_bytes, kept.is_leader is True):
            at[p.ts_ms] = p
    return {k: [at[t] for t in sorted(at)] for k, at in by_key.items()}


def replica_growth(points: Sequence[ReplicaPoint]) -> ReplicaGrowth:
    """The growth of one replica from its time-ordered points in the window."""
    last = points[-1]
    troughs = [(b.ts_ms, b.size_bytes) for a, b in pairwise(points) if b.size_bytes < a.size_bytes]
    if troughs:
        (t0, v0), (t1, v1) = troughs[0], troughs[-1]
        rate = recent = per_second(v1 - v0, t1 - t0) if t1 > t0 else 0.0
    else:
        fitted = trend([(p.ts_ms, p.size_bytes) for p in points])
        rate = fitted.rate if fitted.rate is not None else 0.0
        recent = fitted.recent if fitted.recent is not None else 0.0
    return ReplicaGrowth(last.cluster, last.broker_id, last.log_dir, last.topic, last.partition,
                         last.size_bytes, last.ts_ms, len(troughs), rate, recent, last.is_leader is True)


def growths(points: Iterable[ReplicaPoint]) -> list[ReplicaGrowth]:
    """Every replica's growth, followers taking their partition leader's (module docstring)."""
    own = [replica_growth(s) for s in series(points).values()]
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
        out.append(g if leader is None else replace(g, rate=leader.rate, recent=leader.recent))
    return out
