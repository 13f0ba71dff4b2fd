"""Replica growth with Spark: the twin of `quotaplane.forecast.engine.replicas`.

One window over each replica (ordered by time) gives every point the previous size (a drop is
`size < previous`) and its series' first, last and middle time; one aggregation per replica gives
the trend and the first and last trough; the partition leader's growth is then given to its
followers.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from quotaplane.forecast.spark.trend import per_second, point_aggregates, trend_columns

REPLICA = ("cluster", "broker_id", "log_dir", "topic", "partition")
PARTITION = ("cluster", "topic", "partition")


def one_per_time(sizes: DataFrame) -> DataFrame:
    """One point per replica and time: the largest size (then a leader over a follower)."""
    best = F.max(F.struct(F.col("size_bytes"), F.coalesce(F.col("is_leader"), F.lit(False)).alias("leader")))
    return (sizes.groupBy(*REPLICA, "ts").agg(best.alias("_b"))
            .select(*REPLICA, "ts", F.col("_b.size_bytes").alias("size_bytes"),
                    F.col("_b.leader").alias("is_leader")))


def replica_growth(sizes: DataFrame) -> DataFrame:
    """Per replica: `size_bytes` and `last_ts` at its last point, `drops`, `rate`, `recent`, `is_leader`."""
    ordered = Window.partitionBy(*REPLICA).orderBy("ts")
    whole = Window.partitionBy(*REPLICA)
    points = one_per_time(sizes).select(
        "*", F.lag("size_bytes").over(ordered).alias("_prev"),
        F.min("ts").over(whole).alias("_t0"), F.max("ts").over(whole).alias("_t1"))
    points = points.withColumn("_mid", F.col("_t0") + F.expr("(_t1 - _t0) div 2"))
    trough = F.when(F.col("size_bytes") < F.col("_prev"),
                    F.struct(F.col("ts").alias("ts"), F.col("size_bytes").alias("v")))
    agg = points.groupBy(*REPLICA).agg(
        *point_aggregates("ts", "size_bytes"),
        F.count(trough).alias("drops"), F.min(trough).alias("_tr0"), F.max(trough).alias("_tr1"),
        F.max(F.struct(F.col("ts"), F.col("is_leader"))).alias("_lead"))
    rate, recent = trend_columns()
    tr0, tr1 = F.col("_tr0"), F.col("_tr1")
    trough_rate = F.when(tr1.ts > tr0.ts, per_second(tr1.v - tr0.v, tr1.ts - tr0.ts)).otherwise(F.lit(0.0))
    saturated = F.col("drops") > 0
    return agg.select(
        *REPLICA, F.col("last.v").alias("size_bytes"), F.col("last.ts").alias("last_ts"),
        F.col("drops").cast("long").alias("drops"),
        F.when(saturated, trough_rate).otherwise(F.coalesce(rate, F.lit(0.0))).alias("rate"),
        F.when(saturated, trough_rate).otherwise(F.coalesce(recent, F.lit(0.0))).alias("recent"),
        F.col("_lead.is_leader").alias("is_leader"))


def growths(sizes: DataFrame) -> DataFrame:
    """Every replica's growth, followers taking their partition leader's (the one seen last, then
    the lowest broker id and log dir)."""
    own = replica_growth(sizes)
    choice = F.struct((-F.col("last_ts")).alias("k0"), F.col("broker_id").alias("k1"),
                      F.col("log_dir").alias("k2"), F.col("rate").alias("rate"),
                      F.col("recent").alias("recent"))
    leaders = (own.where(F.col("is_leader")).groupBy(*PARTITION).agg(F.min(choice).alias("_l"))
               .select(*PARTITION, F.col("_l.rate").alias("_lrate"), F.col("_l.recent").alias("_lrecent")))
    joined = own.join(leaders, list(PARTITION), "left")
    return joined.select(
        *REPLICA, "size_bytes", "last_ts", "drops", "is_leader",
        F.coalesce(F.col("_lrate"), F.col("rate")).alias("rate"),
        F.coalesce(F.col("_lrecent"), F.col("recent")).alias("recent"))
