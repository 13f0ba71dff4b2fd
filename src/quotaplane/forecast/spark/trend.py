"""Trends of many series at once: the twin of `quotaplane.forecast.engine.trend`.

A series is one key's `(ts, value)` points with one point per time. `first`, `last` and `mid` are
struct aggregates (`(ts, value)` ordered by time), after one window over the key gives each point
its series' first and last time: one shuffle by the key.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F


def per_second(delta: Column, span_ms: Column) -> Column:
    """`delta * 1000 / span_ms` as a double, in the reference's order."""
    return (delta * F.lit(1000)).cast("double") / span_ms.cast("double")


def with_span(df: DataFrame, keys: Sequence[str], ts: str = "ts") -> DataFrame:
    """Add `_t0`, `_t1` (the series' first and last time) and `_mid` (the midpoint, whole ms)."""
    whole = Window.partitionBy(*keys)
    out = df.select("*", F.min(ts).over(whole).alias("_t0"), F.max(ts).over(whole).alias("_t1"))
    return out.withColumn("_mid", F.col("_t0") + F.expr("(_t1 - _t0) div 2"))


def point_aggregates(ts: str, value: str, prefix: str = "") -> list[Column]:
    """The aggregates of `trend_columns`: first, last and mid points as `(ts, value)` structs."""
    point = F.struct(F.col(ts).alias("ts"), F.col(value).alias("v"))
    return [F.min(point).alias(f"{prefix}first"), F.max(point).alias(f"{prefix}last"),
            F.max(F.when(F.col(ts) <= F.col("_mid"), point)).alias(f"{prefix}mid")]


def trend_columns(prefix: str = "") -> tuple[Column, Column]:
    """(`rate`, `recent`) from the aggregates of `point_aggregates`; null for a single time."""
    first, last, mid = (F.col(f"{prefix}{n}") for n in ("first", "last", "mid"))
    moved = last.ts > first.ts
    rate = F.when(moved, per_second(last.v - first.v, last.ts - first.ts))
    recent = F.when(moved, per_second(last.v - mid.v, last.ts - mid.ts))
    return rate, recent
