"""Per-volume limits as Spark column expressions: the arithmetic of `quotaplane.storage.engine.limits`,
operation for operation, so that both engines give bit-identical doubles."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from quotaplane.storage.config import VolumeLimit


def available_ratio(total: Column, available: Column) -> Column:
    """`available / total` in doubles, 0.0 when total is 0 (spec: Volume)."""
    return F.when(total == 0, F.lit(0.0)).otherwise(
        F.try_divide(available.cast("double"), total.cast("double")))


def breached(limit: VolumeLimit, total: Column, available: Column) -> Column:
    """spec: Hard/Soft Limit Configuration: `<=` for the below-limits, `>=` for usedBytesAbove."""
    if limit.kind == "availableBytesBelow":
        return available <= F.lit(int(limit.value))
    if limit.kind == "availableRatioBelow":
        return available_ratio(total, available) <= F.lit(float(limit.value))
    return (total - available) >= F.lit(int(limit.value))


def threshold_bytes(limit: VolumeLimit, total: Column) -> Column:
    """The limit as available bytes of the volume: `x`, `x * total` or `total - x` (doubles)."""
    if limit.kind == "availableBytesBelow":
        return F.lit(float(int(limit.value)))
    if limit.kind == "availableRatioBelow":
        return F.lit(float(limit.value)) * total.cast("double")
    return (total - F.lit(int(limit.value))).cast("double")


def assess(soft: VolumeLimit, hard: VolumeLimit, total: str = "total_bytes",
           available: str = "available_bytes"):
    """`DataFrame -> DataFrame` adding `soft_threshold`, `hard_threshold`, `soft_breached`,
    `hard_breached`, `volume_factor` (the linear ramp, clamped) and `headroom`."""

    def apply(df: DataFrame) -> DataFrame:
        t, a = F.col(total), F.col(available)
        out = df.select(
            "*",
            threshold_bytes(soft, t).alias("soft_threshold"),
            threshold_bytes(hard, t).alias("hard_threshold"),
            breached(soft, t, a).alias("soft_breached"),
            breached(hard, t, a).alias("hard_breached"),
        )
        s, h, avail = F.col("soft_threshold"), F.col("hard_threshold"), F.col(available).cast("double")
        ramp = F.try_divide(avail - h, s - h)
        factor = (F.when(F.col("hard_breached"), F.lit(0.0))
                  .when(~F.col("soft_breached") | (s <= h), F.lit(1.0))
                  .when(ramp > 1.0, F.lit(1.0))
                  .when(ramp < 0.0, F.lit(0.0))
                  .otherwise(ramp))
        return out.select("*", factor.alias("volume_factor"), (avail - h).alias("headroom"))

    return apply


def legacy_factor(used: Column, soft_bytes: int, hard_bytes: int) -> Column:
    """The deprecated aggregate rule: ramp when `soft < used < hard`, 0 when `used >= hard`, else 1."""
    soft, hard = F.lit(soft_bytes).cast("long"), F.lit(hard_bytes).cast("long")
    ramp = F.lit(1.0) - F.try_divide((used - soft).cast("double"), (hard - soft).cast("double"))
    return (F.when((soft < used) & (used < hard), ramp)
            .when(used >= hard, F.lit(0.0))
            .otherwise(F.lit(1.0)))
