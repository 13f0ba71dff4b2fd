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


def with_span(df: DataFrame, keys: Sequence[str], ts: str = "ts", where: Column | None = None,
              span: str = "") -> DataFrame:
    """Add `_t0{span}`, `_t1{span}` (the series' first and last time, over its points where `where`
    holds) and `_mid{span}` (their midpoint, whole ms)."""
    whole = Window.partitionBy(*keys)
    time = F.col(ts) if where is None else F.when(where, F.col(ts))
    t0, t1 = f"_t0{span}", f"_t1{span}"
    out = df.select("*", F.min(time).over(whole).alias(t0), F.max(time).over(whole).alias(t1))
    return out.withColumn(f"_mid{span}", F.col(t0) + F.expr(f"({t1} - {t0}) div 2"))


def point_aggregates(ts: str, value: str, prefix: str = "", where: Column | None = None,
                     span: str = "") -> list[Column]:
    """The aggregates of `trend_columns`: first, last and mid points (`mid`: the last at or before
    `_mid{span}` of `with_span`) as `(ts, value)` structs, over the points where `where` holds."""
    point = F.struct(F.col(ts).alias("ts"), F.col(value).alias("v"))
    kept = point if where is None else F.when(where, point)
    middle = F.col(ts) <= F.col(f"_mid{span}")
    return [F.min(kept).alias(f"{prefix}first"), F.max(kept).alias(f"{prefix}last"),
            F.max(F.when(middle if where is None else where & middle, point)).alias(f"{prefix}mid")]


def trend_columns(prefix: str = "") -> tuple[Column, Column]:
    """(`rate`, `recent`) from the aggregates of `point_aggregates`; null for a single time."""
    first, last, mid = (F.col(f"{prefix}{n}") for n in ("first", "last", "mid"))
    moved = last.ts > first.ts
    rate = F.when(moved, per_second(last.v - first.v, last.ts - first.ts))
    recent = F.when(moved, per_second(last.v - mid.v, last.ts - mid.ts))
    return rate, recent
