"""Java's numeric casts as Spark columns, bit for bit like `quotaplane.backlog.engine.eviction`."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


def java_int(x: Column) -> Column:
    """`(int)` of a double column: truncate toward zero, saturate, NaN is 0 (as a long column)."""
    return (F.when(F.isnan(x), F.lit(0).cast("long"))
            .when(x >= F.lit(float(INT_MAX)), F.lit(INT_MAX).cast("long"))
            .when(x <= F.lit(float(INT_MIN)), F.lit(INT_MIN).cast("long"))
            .otherwise(x.cast("long")))


def java_long(x: Column) -> Column:
    """`(long)` of a double column: truncate toward zero, saturate, NaN is 0."""
    return (F.when(F.isnan(x), F.lit(0).cast("long"))
            .when(x >= F.lit(float(2**63)), F.lit(LONG_MAX).cast("long"))
            .when(x <= F.lit(float(LONG_MIN)), F.lit(LONG_MIN).cast("long"))
            .otherwise(x.cast("long")))


def as_double(x: Column) -> Column:
    return x.cast("double")
