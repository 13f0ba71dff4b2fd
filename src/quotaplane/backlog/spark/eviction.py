"""What each eviction run would evict, per subscription (rules and estimates:
`quotaplane.backlog.engine.eviction`, docs/backlog.md).

`with_evictions` works on the decided rows (every subscription row carries its topic's decision,
see `quotaplane.backlog.spark.checks`) and adds, per row, what an eviction run takes from that
subscription: a row is evicted by at most one quota type (the one exceeded), so no join or union
is needed. `eviction_rows` keeps the evicted rows with the table's columns:
`ts_ms, topic, quota_type, subscription, entries, bytes`.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from quotaplane.backlog.engine.eviction import REDUCTION_FACTOR
from quotaplane.backlog.engine.model import SIZE, TIME
from quotaplane.backlog.spark.checks import slowest_key
from quotaplane.core.javamath import double_to_int, double_to_long
from quotaplane.core.spark.readers import used_row

EVICTION_COLUMNS = ("_ev_type", "_ev_subscription", "_ev_entries", "_ev_bytes")


def eviction_target(limit: Column) -> Column:
    """`(long)(0.9 * limit)`."""
    return double_to_long.column(F.lit(REDUCTION_FACTOR) * limit.cast("double"))


def estimate_expired() -> Column:
    """Estimate mode: the subscription's oldest message sits in a closed ledger past the limit."""
    close = F.col("oldest_unacked_ledger_close_ts_ms")
    expired = (F.col("oldest_unacked_publish_ts_ms").isNotNull() & (close > 0)
               & (F.col("ts_ms") - close > F.col("time_limit") * 1000))
    return F.coalesce(expired, F.lit(False))


def with_evictions(precise: bool) -> Callable[[DataFrame], DataFrame]:
    """`decided.transform(with_evictions(precise))`: add `EVICTION_COLUMNS` (`_ev_type` null when
    the row's subscription is not evicted). In estimate mode the rows need `_stop`: the minimum
    of `slowest_key` over the tick's used rows that are not `estimate_expired`.

    Every intermediate value is a column of its own, used by name: inlined, the Java casts (each
    repeats its argument) would multiply into generated code too large for the JIT to compile."""

    def transform(df: DataFrame) -> DataFrame:
        size, entries = F.col("topic_backlog_size_bytes"), F.col("topic_backlog_entries")
        publish = F.col("oldest_unacked_publish_ts_ms")
        if precise:
            # every subscription whose oldest message is older than the target age
            cutoff = F.col("ts_ms") - F.col("_target_ms")
            time_hit = publish.isNotNull() & (F.col("ts_ms") > publish + F.col("_target_ms"))
            df = df.withColumn("_target_ms", eviction_target(F.col("time_limit")) * 1000)
        else:
            # the slowest cursors, in order, as long as each sits in a closed ledger past the limit:
            # every used subscription slower than the slowest one that is not expired (`_stop`)
            cutoff = F.col("ts_ms") - F.col("time_limit") * 1000
            time_hit = estimate_expired() & (F.col("_stop").isNull() | (slowest_key() < F.col("_stop")))
        # the share of the subscription's backlog published before the cutoff (`f` in docs/backlog.md)
        fraction = (F.col("_cutoff") - publish).cast("double") / (F.col("ts_ms") - publish).cast("double")
        later = F.col("_cutoff") <= publish
        zero = F.lit(0).cast("long")
        run = used_row() & F.col("eviction_run")
        by_size, by_time = F.col("_by_size"), F.col("_by_time")
        time_entries = F.when(later, zero).otherwise(
            double_to_int.column(F.col("_fraction") * F.col("backlog_entries").cast("double")))
        time_bytes = F.when(later, zero).otherwise(
            double_to_long.column(F.col("_fraction") * F.col("backlog_size_bytes").cast("double")))
        # each `withColumns` adds the columns that need only the ones before it
        out = (df
               .withColumns({"_target": eviction_target(F.col("size_limit")), "_cutoff": cutoff})
               .withColumns({
                   # Size: the first skip on the slowest cursor.
                   "_skip": F.when(size > F.col("_target"), double_to_int.column(
                       (size - F.col("_target")).cast("double") * entries.cast("double")
                       / size.cast("double"))),
                   "_by_time": F.coalesce(run & (F.col("exceeded") == TIME) & time_hit, F.lit(False)),
               })
               .withColumns({
                   "_by_size": F.coalesce(F.col("_rank1") & run & (F.col("exceeded") == SIZE)
                                          & (F.col("_skip") > 0), F.lit(False)),
                   # only where it is used (ANSI mode fails a division by zero)
                   "_fraction": F.when(by_time & ~later, fraction),
               })
               .withColumns({
                   "_ev_type": F.when(by_size, F.lit(SIZE)).when(by_time, F.lit(TIME)),
                   "_ev_subscription": F.when(by_size, F.col("oldest_subscription"))
                   .when(by_time, F.col("subscription")),
                   "_ev_entries": F.when(by_size, F.col("_skip")).when(by_time, time_entries),
                   "_ev_bytes": F.when(by_size, size - F.col("_target")).when(by_time, time_bytes),
               }))
        return out.drop("_target", "_cutoff", "_fraction", "_skip", "_by_size", "_by_time",
                        *(("_target_ms",) if precise else ("_stop",)))

    return transform


def eviction_rows(df: DataFrame) -> DataFrame:
    """One row per (tick, topic, subscription) evicted (needs `with_evictions`)."""
    return df.where(F.col("_ev_type").isNotNull()).select(
        "ts_ms", "topic",
        # never null here; coalesced so that the column stays non-nullable, as the table had it
        F.coalesce(F.col("_ev_type"), F.lit(SIZE)).alias("quota_type"),
        F.col("_ev_subscription").alias("subscription"),
        F.col("_ev_entries").alias("entries"), F.col("_ev_bytes").alias("bytes"))
