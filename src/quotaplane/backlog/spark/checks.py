"""The check of every (tick, topic): `DataFrame -> DataFrame` transforms (spec: Backlog Quota
Eviction in the Broker; rules in `quotaplane.backlog.engine.checks`).

The rows are every snapshot of a (tick, topic), used (`used_row()`: it passed the row and group
rules) or quarantined. The used subscription holding the oldest unacknowledged message (ties:
larger backlog, then subscription name) is the minimum of `oldest_value` over the tick's used
rows, an unordered window (the stage computes it, `quotaplane.backlog.spark.evaluate`);
`with_oldest` copies its values to every row.
`decide` adds the topic backlog, its age, the exceeded quota and the action; `topic_rows` keeps the
one row per (tick, topic) that holds its check (`_rank1`).
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from quotaplane.backlog.config import CONSUMER_BACKLOG_EVICTION, PRODUCER_EXCEPTION, PRODUCER_REQUEST_HOLD
from quotaplane.backlog.engine.model import SIZE, TIME
from quotaplane.core.spark.readers import used_row

# The per-(tick, topic) columns, with their public names.
TOPIC_COLUMNS = (
    "ts_ms", "topic", "namespace", "partitioned_topic", ("topic_backlog_size_bytes", "backlog_size_bytes"),
    ("topic_backlog_entries", "backlog_entries"), "backlog_age_seconds", "oldest_subscription",
    "size_limit", "time_limit", "size_policy", "time_policy", "size_level", "time_level", "exceeded",
    "action", "producers", "eviction_run",
)


def slowest_key() -> Column:
    """The slowest cursor first (`oldest.oldest_key`) as one orderable struct: oldest publish time
    first (no backlog last), then the larger backlog (sizes are never negative), then the name;
    unique among the used rows of a tick (a subscription seen twice is quarantined)."""
    publish = F.col("oldest_unacked_publish_ts_ms")
    return F.struct(publish.isNull().alias("none"), publish.alias("publish"),
                    (-F.col("backlog_size_bytes")).alias("size"), F.col("subscription").alias("name"))


def whole_seconds() -> Column:
    """`_elapsed_ms` in whole seconds truncated toward zero, like Java's `toSeconds`: Spark's
    integral `div` of longs (null stays null)."""
    return F.expr("_elapsed_ms div 1000")


def oldest_value() -> Column:
    """What a tick keeps of its slowest subscription: the minimum of this struct over the tick's
    used rows (`slowest_key` first) is that subscription's."""
    return F.struct(slowest_key().alias("key"), F.col("oldest_unacked_ledger_close_ts_ms").alias("close"),
                    F.col("backlog_size_bytes").alias("size"), F.col("backlog_entries").alias("entries"))


def with_oldest(df: DataFrame) -> DataFrame:
    """From `_o` (the minimum of `oldest_value` over the tick's used rows): the oldest subscription's
    values `_o_*` and `_rank1` (the used row holding it, one per (tick, topic) with used rows)."""
    return (df.select("*", F.col("_o.key.publish").alias("_o_publish"), F.col("_o.close").alias("_o_close"),
                      F.col("_o.size").alias("_o_size"), F.col("_o.entries").alias("_o_entries"),
                      F.col("_o.key.name").alias("_o_subscription"))
            .withColumn("_rank1", F.coalesce(used_row() & (F.col("subscription") == F.col("_o_subscription")),
                                             F.lit(False)))
            .drop("_o"))


def decide(precise: bool) -> Callable[[DataFrame], DataFrame]:
    """Topic backlog, age, size check first then time check, action (needs `with_oldest`)."""

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
        # each `withColumns` adds the columns that need only the ones before it: one projection
        # for Spark to analyse per step rather than one per column
        return (df
                .withColumns({
                    "age_base_ms": base,
                    "topic_backlog_size_bytes": size,
                    "topic_backlog_entries": F.when(has_oldest, F.col("_o_entries"))
                    .otherwise(F.lit(0).cast("long")),
                    "oldest_subscription": F.when(has_oldest, F.col("_o_subscription")),
                })
                .withColumn("_elapsed_ms", F.col("ts_ms") - F.col("age_base_ms"))
                .withColumns({"backlog_age_seconds": whole_seconds(), "exceeded": exceeded})
                .drop("_elapsed_ms")
                .withColumn("action", action)
                .withColumns({
                    "producers": producers,
                    "eviction_run": F.coalesce(F.col("action") == CONSUMER_BACKLOG_EVICTION, F.lit(False)),
                }))

    return transform


def topic_rows(df: DataFrame, *more: str) -> DataFrame:
    """One row per (tick, topic): the decided rows of `_rank1`, the `TOPIC_COLUMNS` and `more`."""
    columns = [F.col(c[0]).alias(c[1]) if isinstance(c, tuple) else F.col(c) for c in TOPIC_COLUMNS]
    return df.where(F.col("_rank1")).select(*columns, *more)
