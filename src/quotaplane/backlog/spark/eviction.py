"""What each eviction run would evict, per subscription (rules and estimates:
`quotaplane.backlog.engine.eviction`, docs/backlog.md).

Works on the decided, ranked rows of `checks` (every subscription row carries its topic's
decision), so the precise time path can look at every subscription with no join. Columns:
`ts_ms, topic, quota_type, subscription, entries, bytes`.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from quotaplane.backlog.engine.eviction import REDUCTION_FACTOR
from quotaplane.backlog.engine.model import SIZE, TIME
from quotaplane.backlog.spark.checks import slowest_first
from quotaplane.core.javamath import double_to_int, double_to_long

COLUMNS = ("ts_ms", "topic", "quota_type", "subscription", "entries", "bytes")


def eviction_target(limit: Column) -> Column:
    """`(long)(0.9 * limit)`."""
    return double_to_long.column(F.lit(REDUCTION_FACTOR) * limit.cast("double"))


def _older_than(cutoff: Column, publish: Column, entries: Column, size: Column) -> tuple[Column, Column]:
    fraction = (cutoff - publish).cast("double") / (F.col("ts_ms") - publish).cast("double")
    later = cutoff <= publish
    zero = F.lit(0).cast("long")
    return (
        F.when(later, zero).otherwise(double_to_int.column(fraction * entries.cast("double"))),
        F.when(later, zero).otherwise(double_to_long.column(fraction * size.cast("double"))),
    )


def evictions(precise: bool) -> Callable[[DataFrame], DataFrame]:
    """`decided.transform(evictions(precise))`: one row per (tick, topic, subscription) evicted."""

    def transform(df: DataFrame) -> DataFrame:
        runs = df.where(F.col("eviction_run"))
        # Size: the first skip on the slowest cursor.
        size, entries = F.col("topic_backlog_size_bytes"), F.col("topic_backlog_entries")
        target = eviction_target(F.col("size_limit"))
        skip = F.when(size > target, double_to_int.column(
            (size - target).cast("double") * entries.cast("double") / size.cast("double")))
        by_size = (
            runs.where((F.col("exceeded") == SIZE) & (F.col("_rank") == 1))
            .withColumn("entries", skip)
            .withColumn("bytes", size - target)
            .where(F.col("entries") > 0)
            .select(
                "ts_ms",
                "topic",
                F.lit(SIZE).alias("quota_type"),
                F.col("oldest_subscription").alias("subscription"),
                "entries",
                "bytes",
            )
        )
        # Time.
        time_runs = runs.where(F.col("exceeded") == TIME)
        if precise:
            target_ms = eviction_target(F.col("time_limit")) * 1000
            publish = F.col("oldest_unacked_publish_ts_ms")
            hit = time_runs.where(publish.isNotNull() & (F.col("ts_ms") > publish + target_ms))
            ev_entries, ev_bytes = _older_than(
                F.col("ts_ms") - target_ms, publish, F.col("backlog_entries"), F.col("backlog_size_bytes")
            )
            subscription = F.col("subscription")
        else:
            # the slowest cursors, in order, as long as each sits in a closed ledger past the limit
            close = F.col("oldest_unacked_ledger_close_ts_ms")
            publish = F.col("oldest_unacked_publish_ts_ms")
            expired = (publish.isNotNull() & (close > 0)
                       & (F.col("ts_ms") - close > F.col("time_limit") * 1000))
            so_far = Window.partitionBy("ts_ms", "topic").orderBy(*slowest_first()).rowsBetween(
                Window.unboundedPreceding, Window.currentRow)
            hit = (time_runs.withColumn("_moved", F.min(F.coalesce(expired, F.lit(False)).cast("int"))
                                        .over(so_far) == 1)
                   .where(F.col("_moved")))
            ev_entries, ev_bytes = _older_than(
                F.col("ts_ms") - F.col("time_limit") * 1000, publish, F.col("backlog_entries"),
                F.col("backlog_size_bytes"))
            subscription = F.col("subscription")
        by_time = hit.select(
            "ts_ms",
            "topic",
            F.lit(TIME).alias("quota_type"),
            subscription.alias("subscription"),
            ev_entries.alias("entries"),
            ev_bytes.alias("bytes"),
        )
        return by_size.unionByName(by_time)

    return transform
