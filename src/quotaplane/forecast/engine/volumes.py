"""Per volume: seconds until its soft limit, its hard limit and full, and what fills it.

docs/forecast.md, "Volumes". As of `at` (default: the last volume observation), for each volume
observed in `(at - window, at]`:

- its state is its last observation (available and total bytes); its soft and hard thresholds in
  available bytes and whether they are breached are the storage engine's own (`threshold_bytes`,
  `breached`; spec: Limit Type Configuration), for per-volume limits; full is `available <= 0`;
- its growth (bytes per second) is the sum of the growth of the replicas on it
  (`quotaplane.forecast.engine.replicas`, over the replica history) when `partition_sizes` has rows
  for it in the window (method `partitions`): the replicas of its latest partition round, so a
  replica moved away or deleted no longer counts; otherwise the trend of its used bytes (method
  `volume`);
- its acceleration is the sum of its replicas' (only sustained accelerating growth has one);
- times follow `quotaplane.forecast.engine.timing`, with the acceleration; the band `low`/`high` is
  the time to the hard limit (full when no per-volume limit is configured) at the faster growth of
  the two with the acceleration, and at the slower without it;
- its top contributors are the topics (and partitions) with positive growth on it, with their
  share of that positive growth, largest first (ties: by name).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from quotaplane.forecast.config import ForecastSettings
from quotaplane.forecast.engine.replicas import ReplicaGrowth, ReplicaPoint, growths
from quotaplane.forecast.engine.timing import band, seconds_to
from quotaplane.forecast.engine.trend import trend
from quotaplane.storage.config import StorageConfig
from quotaplane.storage.engine.limits import breached, threshold_bytes
from quotaplane.storage.engine.volume import Volume

VolumeKey = tuple[str, int, str]  # cluster, broker_id, log_dir


@dataclass(frozen=True, slots=True)
class VolumePoint:
    """One `volumes` row (docs/telemetry.md)."""

    ts_ms: int
    cluster: str
    broker_id: int
    log_dir: str
    total_bytes: int
    available_bytes: int

    @property
    def key(self) -> VolumeKey:
        return (self.cluster, self.broker_id, self.log_dir)

    @classmethod
    def from_record(cls, row: Mapping[str, Any]) -> VolumePoint:
        """A typed `volumes` record (as the readers give it) as a point."""
        return cls(row["ts"], row["cluster"], row["broker_id"], row["log_dir"], row["total_bytes"],
                   row["available_bytes"])


@dataclass(frozen=True)
class VolumeForecast:
    cluster: str
    broker_id: int
    log_dir: str
    at_ms: int
    observed_ts_ms: int
    total_bytes: int
    available_bytes: int
    soft_threshold_bytes: float | None
    hard_threshold_bytes: float | None
    method: str  # partitions | volume
    growth_bytes_per_second: float | None
    recent_growth_bytes_per_second: float | None
    acceleration_bytes_per_second_squared: float
    seconds_to_soft: float | None
    seconds_to_hard: float | None
    seconds_to_full: float | None
    low: float | None
    high: float | None
    top_contributors: tuple[dict[str, Any], ...] = field(default=())
    top_partitions: tuple[dict[str, Any], ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        """The CLI's JSON line."""
        return {"kind": "volume", **{k: getattr(self, k) for k in self.__dataclass_fields__}}


def latest_points(points: Iterable[VolumePoint], at_ms: int,
                  window_ms: int) -> dict[VolumeKey, list[VolumePoint]]:
    """Points in the window by volume, in time order, one per time (the least available bytes,
    then the least total bytes)."""
    by_key: dict[VolumeKey, dict[int, VolumePoint]] = {}
    for p in points:
        if at_ms - window_ms < p.ts_ms <= at_ms:
            at = by_key.setdefault(p.key, {})
            kept = at.get(p.ts_ms)
            if kept is None or (p.available_bytes, p.total_bytes) < (kept.available_bytes, kept.total_bytes):
                at[p.ts_ms] = p
    return {k: [at[t] for t in sorted(at)] for k, at in by_key.items()}


def current_replicas(replicas: Iterable[ReplicaPoint], at_ms: int,
                     settings: ForecastSettings) -> dict[VolumeKey, list[ReplicaGrowth]]:
    """Replica growths by volume: the replicas seen in the volume's latest partition round of the
    window."""
    window_start = at_ms - settings.window_ms
    history = [r for r in replicas if at_ms - settings.history_ms < r.ts_ms <= at_ms]
    by_volume: dict[VolumeKey, list[ReplicaGrowth]] = {}
    for g in growths(history, window_start):
        if g.last_ts_ms <= window_start:
            continue
        by_volume.setdefault((g.cluster, g.broker_id, g.log_dir), []).append(g)
    for key, found in by_volume.items():
        latest = max(g.last_ts_ms for g in found)
        by_volume[key] = [g for g in found if g.last_ts_ms == latest]
    return by_volume


def shares(growth_by_name: dict[Any, float], top: int) -> list[tuple[Any, float]]:
    """(name, share of the positive growth), largest first, ties by name; at most `top`."""
    positive = {k: v for k, v in growth_by_name.items() if v > 0.0}
    total = 0.0
    for k in sorted(positive):
        total += positive[k]
    ranked = sorted(positive.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    return [(k, v / total) for k, v in ranked]


def forecast_volumes(points: Iterable[VolumePoint], replicas: Iterable[ReplicaPoint],
                     config: StorageConfig | None, settings: ForecastSettings,
                     at_ms: int | None = None) -> list[VolumeForecast]:
    """Every volume's forecast, ordered by cluster, broker id, log dir."""
    points = list(points)
    if not points:
        return []
    at = at_ms if at_ms is not None else max(p.ts_ms for p in points)
    windows = latest_points(points, at, settings.window_ms)
    growth_by_volume = current_replicas(replicas, at, settings)
    return [_forecast(key, windows[key], growth_by_volume.get(key), config, settings, at)
            for key in sorted(windows)]


def _forecast(key: VolumeKey, points: list[VolumePoint], replicas: list[ReplicaGrowth] | None,
              config: StorageConfig | None, settings: ForecastSettings, at_ms: int) -> VolumeForecast:
    last = points[-1]
    volume = Volume(last.broker_id, last.log_dir, last.total_bytes, last.available_bytes)
    contributors: list[tuple[Any, float]] = []
    partitions: list[tuple[Any, float]] = []
    if replicas:
        method = "partitions"
        growth = recent = acceleration = 0.0
        by_topic: dict[str, float] = {}
        by_partition: dict[tuple[str, int], float] = {}
        for g in sorted(replicas, key=lambda g: (g.topic, g.partition)):
            growth += g.rate
            recent += g.recent
            acceleration += g.acceleration
            by_topic[g.topic] = by_topic.get(g.topic, 0.0) + g.rate
            by_partition[(g.topic, g.partition)] = by_partition.get((g.topic, g.partition), 0.0) + g.rate
        contributors = shares(by_topic, settings.top)
        partitions = shares(by_partition, settings.top)
        g_rate: float | None = growth
        g_recent: float | None = recent
    else:
        method = "volume"
        used = trend([(p.ts_ms, p.total_bytes - p.available_bytes) for p in points])
        g_rate, g_recent = used.rate, used.recent
        acceleration = 0.0
    available = float(volume.available_bytes)
    horizon = settings.horizon_seconds
    soft_t = hard_t = None
    to_soft = to_hard = None
    if config is not None and config.hard is not None and config.soft is not None:
        soft_t = threshold_bytes(config.soft, volume)
        hard_t = threshold_bytes(config.hard, volume)
        to_soft = seconds_to(breached(config.soft, volume), available - soft_t, g_rate, horizon,
                             acceleration)
        to_hard = seconds_to(breached(config.hard, volume), available - hard_t, g_rate, horizon,
                             acceleration)
    full_reached = volume.available_bytes <= 0
    to_full = seconds_to(full_reached, available, g_rate, horizon, acceleration)
    slow, fast = band(g_rate, g_recent)
    if hard_t is not None and config is not None and config.hard is not None:
        level_hit, distance = breached(config.hard, volume), available - hard_t
    else:
        level_hit, distance = full_reached, available
    low = seconds_to(level_hit, distance, fast, horizon, acceleration)
    high = seconds_to(level_hit, distance, slow, horizon)
    return VolumeForecast(
        cluster=key[0], broker_id=key[1], log_dir=key[2], at_ms=at_ms, observed_ts_ms=last.ts_ms,
        total_bytes=last.total_bytes, available_bytes=last.available_bytes,
        soft_threshold_bytes=soft_t, hard_threshold_bytes=hard_t, method=method,
        growth_bytes_per_second=g_rate, recent_growth_bytes_per_second=g_recent,
        acceleration_bytes_per_second_squared=acceleration,
        seconds_to_soft=to_soft, seconds_to_hard=to_hard, seconds_to_full=to_full, low=low, high=high,
        top_contributors=tuple({"topic": t, "share": s} for t, s in contributors),
        top_partitions=tuple({"topic": t, "partition": p, "share": s} for (t, p), s in partitions),
    )
