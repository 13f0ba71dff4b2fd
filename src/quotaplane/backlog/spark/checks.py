"""The check of every (tick, topic): `DataFrame -> DataFrame` transforms (spec: Backlog Quota
Eviction in the Broker; rules in `quotaplane.backlog.engine.checks`).

`rank_subscriptions` orders the subscriptions of each (tick, topic) so the first holds the oldest
unacknowledged message (ties: larger backlog, then subscription name) and copies that
subscription's values to every row of the group (one window, no join). `decide` adds the topic
backlog, its age, the exceeded quota and the action; `topic_rows` keeps one row per (tick, topic).
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from quotaplane.backlog.config import CONSUMER_BACKLOG_EVICTION, PRODUCER_EXCEPTION, PRODUCER_REQUEST_HOLD
from quotaplane.backlog.engine.model import SIZE, TIME


def slowest_first() -> tuple[Column, ...]:
    """The slowest cursor first (`oldest.oldest_key`): oldest publish time first (no backlog last),
    then the larger backlog, then the name."""
    return (F.col("oldest_unacked_publish_ts_ms").asc_nulls_last(), F.col("backlog_size_bytes").desc(),
            F.col("subscription").asc())

_OLDEST = {
    "_o_publish": "oldest_unacked_publish_ts_ms",
    "_o_close": "oldest_unacked_ledger_close_ts_ms",
    "_o_size": "backlog_size_bytes",
    "_o_entries": "backlog_entries",
    "_o_subscription": "subscription",
}

# The per-(tick, topic) columns, with their public names.
TOPIC_COLUMNS = (
    "ts_ms", "topic", "namespace", "partitioned_topic", ("topic_backlog_size_bytes", "backlog_size_bytes"),
    ("topic_backlog_entries", "backlog_entries"), "backlog_age_seconds", "oldest_subscription",
    "size_limit", "time_limit", "size_policy", "time_policy", "size_level", "time_level", "exceeded",
    "action", "producers", "eviction_run",
)


def whole_seconds() -> Column:
    """`_elapsed_ms` in whole seconds truncated toward zero, like Java's `toSeconds`: Spark's
    integral `div` of longs (null stays null)."""
    return F.expr("_elapsed_ms div 1000")


def rank_subscriptions(df: DataFrame) -> DataFrame:
    """Add `_rank` (1 = the oldest subscription) and the oldest subscription's values `_o_*`."""
    ordered = Window.partitionBy("ts_ms", "topic").orderBy(*slowest_first())
    whole = ordered.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    out = df.withColumn("_rank", F.row_number().over(ordered))
    for alias, column in _OLDEST.items():
        out = out.withColumn(alias, F.first(F.col(column)).over(whole))
    return out


def decide(precise: bool) -> Callable[[DataFrame], DataFrame]:
    """Topic backlog, age, size check first then time check, action (needs `rank_subscriptions`)."""

    def transform(df: DataFrame) -> DataFrame:
        has_oldest = F.col("_o_publish").isNotNull()
        if precise:
            base = F.col("_o_publish")
        else:
            base = F.when(has_oldest & (F.col("_o_close") > 0), F.col("_o_close"))
        size = F.when(has_oldest, F.col("_o_size")).otherwise(F.lit(0).cast("long"))
        topic_size = F.col("topic_backlog_size_bytes")
        size_exceeded = (F.col("size_limit") >= 0) & (topic_size >= F.col("size_limit"))
        time_exceeded = ((F.col("time_limit") > 0) & F.col("age_base_ms").isNotNull()
                         & (F.col("ts_ms") > F.col("age_base_ms") + F.col("time_limit") * 1000))
        exceeded = F.when(size_exceeded, F.lit(SIZE)).when(time_exceeded, F.lit(TIME))
        action = (F.when(F.col("exceeded") == SIZE, F.col("size_policy"))
                  .when(F.col("exceeded") == TIME, F.col("time_policy")))
        producers = (F.when(F.col("action") == PRODUCER_REQUEST_HOLD, F.lit("held"))
                     .when(F.col("action") == PRODUCER_EXCEPTION, F.lit("failed")))
        return (df
                .withColumn("age_base_ms", base)
                .withColumn("topic_backlog_size_bytes", size)
                .withColumn("topic_backlog_entries", F.when(has_oldest, F.col("_o_entries"))
                            .otherwise(F.lit(0).cast("long")))
                .withColumn("oldest_subscription", F.when(has_oldest, F.col("_o_subscription")))
                .withColumn("_elapsed_ms", F.col("ts_ms") - F.col("age_base_ms"))
                .withColumn("backlog_age_seconds", whole_seconds())
                .drop("_elapsed_ms")
                .withColumn("exceeded", exceeded)
                .withColumn("action", action)
                .withColumn("producers", producers)
                .withColumn("eviction_run", F.coalesce(F.col("action") == CONSUMER_BACKLOG_EVICTION,
                                                       F.lit(False))))

    return transform


def topic_rows(df: DataFrame) -> DataFrame:
    """One row per (tick, topic): the decided rows of rank 1."""
    columns = [F.col(c[0]).alias(c[1]) if isinstance(c, tuple) else F.col(c) for c in TOPIC_COLUMNS]
    return df.where(F.col("_rank") == 1).select(*columns)
