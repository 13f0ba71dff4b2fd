"""The stage's tables as filters and projections of the decided rows
(`quotaplane.backlog.spark.evaluate.decided_rows`): no other pass over the snapshots.

- `topic_rows`: `backlog_checks`, one row per (tick, topic) (the rows of `_rank1`), with the public
  names of its columns;
- `eviction_rows`: `backlog_evictions`, one row per subscription an eviction run would evict;
- `topic_totals`: one small row per topic (and one for rows without a valid topic), the stage
  collects them (`quotaplane.backlog.spark.topics`).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from quotaplane.backlog.engine.kernel import CODED, NEVER_NULL
from quotaplane.core.spark.codes import named

# The per-(tick, topic) columns, with their public names.
TOPIC_COLUMNS = (
    "ts_ms", "topic", "namespace", "partitioned_topic", ("topic_backlog_size_bytes", "backlog_size_bytes"),
    ("topic_backlog_entries", "backlog_entries"), "backlog_age_seconds", "oldest_subscription",
    "size_limit", "time_limit", "size_policy", "time_policy", "size_level", "time_level", "exceeded",
    "action", "producers", "eviction_run",
)


def topic_rows(df: DataFrame, *more: str) -> DataFrame:
    """One row per (tick, topic): the decided rows of `_rank1`, the `TOPIC_COLUMNS` and `more`."""
    def column(c: str | tuple[str, str]) -> Column:
        name, public = c if isinstance(c, tuple) else (c, c)
        return (_decoded(name) if name in CODED else F.col(name)).alias(public)

    return df.where(F.col("_rank1")).select(*[column(c) for c in TOPIC_COLUMNS], *more)


def eviction_rows(df: DataFrame) -> DataFrame:
    """One row per (tick, topic, subscription) evicted."""
    return df.where(F.col("_ev_type").isNotNull()).select(
        "ts_ms", "topic",
        # never null here; named as a column that is never null, as the table had it
        named(F.col("_ev_type"), CODED["_ev_type"], never_null=True).alias("quota_type"),
        F.col("_ev_subscription").alias("subscription"),
        F.col("_ev_entries").alias("entries"), F.col("_ev_bytes").alias("bytes"))


def _decoded(name: str) -> Column:
    """The strings of coded column `name` (`kernel.CODED`), not null where the kernel never leaves
    it null."""
    return named(F.col(name), CODED[name], name in NEVER_NULL)


def topic_totals(df: DataFrame) -> DataFrame:
    """One row per topic: `topic` and the `_topic` fields."""
    return df.where(F.col("_topic").isNotNull()).select("topic", "_topic.*")
