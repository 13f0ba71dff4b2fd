"""Per-volume limits and the legacy aggregate limit: the exact arithmetic of one volume's factor.

The Spark transform (`quotaplane.storage.spark.limits`) computes the same values with the same
operations in the same order, so both engines give bit-identical doubles.

Per volume (spec: Limit Type Configuration; docs/storage-quotas.md):

- a limit is *breached* when `availableBytes <= x` (availableBytesBelow), `availableRatio <= x`
  (availableRatioBelow) or `usedBytes >= x` (usedBytesAbove);
- its *threshold in available bytes* is `x`, `x * total` or `total - x`;
- the volume's factor is 0 when the hard limit is breached, 1 when the soft limit is not, and
  otherwise `(available - hard_threshold) / (soft_threshold - hard_threshold)` clamped to [0, 1]
  (1.0 when the soft threshold is not above the hard one: the hard limit alone then decides);
- its *headroom* is `available - hard_threshold` (bytes left before the hard limit; <= 0 past it).
"""

from __future__ import annotations

from dataclasses import dataclass

from quotaplane.storage.config import VolumeLimit
from quotaplane.storage.engine.volume import Volume


def breached(limit: VolumeLimit, volume: Volume) -> bool:
    """spec: Hard/Soft Limit Configuration: `<=` for the below-limits, `>=` for usedBytesAbove."""
    if limit.kind == "availableBytesBelow":
        return volume.available_bytes <= int(limit.value)
    if limit.kind == "availableRatioBelow":
        return volume.available_ratio <= limit.value
    return volume.used_bytes >= int(limit.value)


def threshold_bytes(limit: VolumeLimit, volume: Volume) -> float:
    """The limit as available bytes of this volume (spec: Limit Type Configuration)."""
    if limit.kind == "availableBytesBelow":
        return float(int(limit.value))
    if limit.kind == "availableRatioBelow":
        return limit.value * float(volume.total_bytes)
    return float(volume.total_bytes - int(limit.value))


@dataclass(frozen=True, slots=True)
class Assessment:
    """One volume judged against the soft and hard limits."""

    volume: Volume
    factor: float
    headroom: float
    soft_threshold: float
    hard_threshold: float
    soft_breached: bool
    hard_breached: bool

    @property
    def severity(self) -> tuple[float, float, int, str]:
        """Sort key of the throttling volume: lowest factor, then least headroom, then broker id, log dir."""
        return (self.factor, self.headroom, self.volume.broker_id, self.volume.log_dir)


def assess(volume: Volume, soft: VolumeLimit, hard: VolumeLimit) -> Assessment:
    """The volume's factor: a linear ramp from 1 at the soft threshold to 0 at the hard threshold."""
    soft_t = threshold_bytes(soft, volume)
    hard_t = threshold_bytes(hard, volume)
    soft_hit = breached(soft, volume)
    hard_hit = breached(hard, volume)
    available = float(volume.available_bytes)
    if hard_hit:
        factor = 0.0
    elif not soft_hit or soft_t <= hard_t:
        factor = 1.0
    else:
        factor = (available - hard_t) / (soft_t - hard_t)
        if factor > 1.0:
            factor = 1.0
        elif factor < 0.0:
            factor = 0.0
    return Assessment(volume, factor, available - hard_t, soft_t, hard_t, soft_hit, hard_hit)


def legacy_factor(used_bytes: int, soft_bytes: int, hard_bytes: int) -> float:
    """The deprecated aggregate rule (spec: Compatibility; shipped 0.2.0 `quotaLimit`).

    `soft < used < hard` (both strict): `1 - (used - soft) / (hard - soft)`; `used >= hard`: 0;
    otherwise 1. With `soft >= hard` the ramp never applies and the hard limit is a step.
    """
    if soft_bytes < used_bytes < hard_bytes:
        return 1.0 - float(used_bytes - soft_bytes) / float(hard_bytes - soft_bytes)
    if used_bytes >= hard_bytes:
        return 0.0
    return 1.0
