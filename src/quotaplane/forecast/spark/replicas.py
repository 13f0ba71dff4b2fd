"""Replica growth with Spark: the twin of `quotaplane.forecast.engine.replicas`.

One window over each replica (ordered by time) gives every point the previous size (a drop is
`size < previous`) and the first and last time of its window points and of its troughs
(`quotaplane.forecast.spark.trend`); one aggregation per replica gives the trend of the window and
the first, middle and last trough; the partition leader's growth is then given to its followers.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from quotaplane.forecast.spark.trend import per_second, point_aggregates, trend_columns, with_span

REPLICA = ("cluster", "broker_id", "log_dir", "topic", "partition")
PARTITION = ("cluster", "topic", "partition")


def one_per_time(sizes: DataFrame) -> DataFrame:
    """One point per replica and time: the largest size (then a leader over a follower)."""
    best = F.max(F.struct(F.col("size_bytes"), F.coalesce(F.col("is_leader"), F.lit(False)).alias("leader")))
    return (sizes.groupBy(*REPLICA, "ts").agg(best.alias("_b"))
            .select(*REPLICA, "ts", F.col("_b.size_bytes").alias("size_bytes"),
                    F.col("_b.leader").alias("is_leader")))


def _slope(a: Column, b: Column) -> Column:
    return per_second(b.v - a.v, b.ts - a.ts)


def _trough_growth(first: Column, last: Column, mid: Column) -> tuple[Column, Column, Column]:
    """(growth, the lookback's slope, acceleration) from the first, last and middle troughs (the
    reference's `_trough_growth`)."""
    whole = F.when(last.ts > first.ts, _slope(first, last)).otherwise(F.lit(0.0))
    early, late = _slope(first, mid), _slope(mid, last)
    inside = (last.ts > first.ts) & (mid.ts > first.ts) & (mid.ts < last.ts)
    sustained = inside & (early > 0.0) & (late > 0.0)
    accelerating = sustained & (late >= early)
    growth = F.when(accelerating, late + (late - early) / F.lit(2.0)).when(sustained, late).otherwise(whole)
    half = (last.ts - first.ts).cast("double") / F.lit(2000.0)
    acceleration = F.when(accelerating, (late - early) / half).otherwise(F.lit(0.0))
    return growth, whole, acceleration


def replica_growth(sizes: DataFrame, window_start_ms: int) -> DataFrame:
    """Per replica, from its points of the history: `size_bytes` and `last_ts` at its last point,
    `drops`, `rate`, `recent`, `is_leader`; the fit window is `ts > window_start_ms`."""
    ordered = Window.partitionBy(*REPLICA).orderBy("ts")
    in_window = F.col("ts") > F.lit(window_start_ms)
    points = one_per_time(sizes).select("*", F.lag("size_bytes").over(ordered).alias("_prev"))
    is_trough = F.col("size_bytes") < F.col("_prev")
    points = with_span(with_span(points, REPLICA, where=in_window), REPLICA, where=is_trough, span="r")
    agg = points.groupBy(*REPLICA).agg(
        *point_aggregates("ts", "size_bytes", "w_", in_window),
        *point_aggregates("ts", "size_bytes", "tr_", is_trough, span="r"),
        F.max(F.struct(F.col("ts").alias("ts"), F.col("size_bytes").alias("v"))).alias("last"),
        F.count(F.when(is_trough, 1)).alias("drops"),
        F.max(F.struct(F.col("ts"), F.col("is_leader"))).alias("_lead"))
    rate, recent = (F.coalesce(c, F.lit(0.0)) for c in trend_columns("w_"))
    troughs = (F.col("tr_first"), F.col("tr_last"), F.col("tr_mid"))
    trough_rate, trough_recent, trough_acc = _trough_growth(*troughs)
    saturated = F.col("drops") > 0
    return agg.select(
        *REPLICA, F.col("last.v").alias("size_bytes"), F.col("last.ts").alias("last_ts"),
        F.col("drops").cast("long").alias("drops"),
        F.when(saturated, trough_rate).otherwise(rate).alias("rate"),
        F.when(saturated, trough_recent).otherwise(recent).alias("recent"),
        F.when(saturated, trough_acc).otherwise(F.lit(0.0)).alias("acceleration"),
        F.col("_lead.is_leader").alias("is_leader"))


def growths(sizes: DataFrame, window_start_ms: int) -> DataFrame:
    """Every replica's growth, followers taking their partition leader's (the one seen last, then
    the lowest broker id and log dir)."""
    own = replica_growth(sizes, window_start_ms)
    choice = F.struct((-F.col("last_ts")).alias("k0"), F.col("broker_id").alias("k1"),
                      F.col("log_dir").alias("k2"), F.col("rate").alias("rate"),
                      F.col("recent").alias("recent"), F.col("acceleration").alias("acceleration"))
    leaders = (own.where(F.col("is_leader")).groupBy(*PARTITION).agg(F.min(choice).alias("_l"))
               .select(*PARTITION, F.col("_l.rate").alias("_lrate"), F.col("_l.recent").alias("_lrecent"),
                       F.col("_l.acceleration").alias("_lacc")))
    joined = own.join(leaders, list(PARTITION), "left")
    return joined.select(
        *REPLICA, "size_bytes", "last_ts", "drops", "is_leader",
        F.coalesce(F.col("_lrate"), F.col("rate")).alias("rate"),
        F.coalesce(F.col("_lrecent"), F.col("recent")).alias("recent"),
        F.coalesce(F.col("_lacc"), F.col("acceleration")).alias("acceleration"))
