"""`quotaplane.forecast.engine.timing` as Spark column expressions."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F


def seconds_to(reached: Column, distance: Column, growth: Column, horizon_seconds: float,
               acceleration: Column | None = None) -> Column:
    d = distance.cast("double")
    constant = d / growth
    if acceleration is None:
        seconds = F.when(growth > 0.0, constant)
    else:
        a = acceleration
        root = (-growth + F.sqrt(growth * growth + F.lit(2.0) * a * d)) / a
        seconds = (F.when(a > 0.0, F.when(d <= 0.0, F.lit(0.0)).otherwise(root))
                   .when(growth > 0.0, constant))
    return (F.when(reached, F.lit(0.0))
            .when(growth.isNull(), F.lit(None).cast("double"))
            .when(seconds <= F.lit(horizon_seconds), seconds))


def band(growth: Column, recent: Column) -> tuple[Column, Column]:
    """(slowest, fastest) growth: the window's and its second half's (the window's alone when
    either is null)."""
    both = growth.isNotNull() & recent.isNotNull()
    return (F.when(both, F.least(growth, recent)).otherwise(growth),
            F.when(both, F.greatest(growth, recent)).otherwise(growth))


def earliest(*times: Column) -> Column:
    return F.least(*times)
