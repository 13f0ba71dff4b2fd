"""Backlog snapshots into Spark: the reader's row rules, then the group rules of a check tick.

Rows that pass the row rules are checked together per (tick, topic): a subscription seen twice
at one tick quarantines its rows, and rows that disagree on `partitioned_topic` quarantine every
row of that group (the reference reader rejects the same files). `read == used + quarantined`
still holds.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from quotaplane.backlog.records import BACKLOG_SNAPSHOTS, DUPLICATE_REASON, PARENT_CONFLICT_REASON
from quotaplane.core.spark.readers import REASON, ReadResult, read_telemetry, used_row


def duplicates() -> Column:
    """How many rows of the row's (tick, topic, subscription) passed the row rules."""
    return F.count(F.when(used_row(), 1)).over(Window.partitionBy("topic", "ts_ms", "subscription"))


def parent() -> Column:
    """The row's `partitioned_topic` ("" for none) when it passed the row rules: the rows of a
    (tick, topic) conflict when its minimum and maximum differ."""
    return F.when(used_row(), F.coalesce(F.col("partitioned_topic"), F.lit("")))


def with_reason(duplicate_count: Column, parent_min: Column, parent_max: Column) -> Column:
    """`_reason` with the group reasons added to rows that passed the row rules (first wins)."""
    group_reason = (F.when(duplicate_count > 1, F.lit(DUPLICATE_REASON))
                    .when(parent_min != parent_max, F.lit(PARENT_CONFLICT_REASON)))
    return F.when(used_row(), group_reason).otherwise(F.col(REASON))


def with_group_rules(checked: DataFrame) -> DataFrame:
    """Add the group reasons to rows that passed the row rules (`reason` stays first-wins)."""
    # topic first, like the stage's pass (`quotaplane.backlog.spark.evaluate`), which applies the
    # same rules with these columns
    by_topic = Window.partitionBy("topic", "ts_ms")
    return checked.withColumn(REASON, with_reason(duplicates(), F.min(parent()).over(by_topic),
                                                  F.max(parent()).over(by_topic)))


def with_group_reasons(result: ReadResult) -> ReadResult:
    """`result` with the group rules applied too (its `used`, `quarantined` and `counts()` cover both)."""
    checked = with_group_rules(result.checked)
    return ReadResult(result.schema, result.source, checked, result.fmt, result.skipped)


def read_snapshots(spark: SparkSession, path: str) -> ReadResult:
    """Read and check the `backlog_snapshots` input at `path`: the reader's rules, then the group
    rules (its `used`, `quarantined` and `counts()` cover both)."""
    return with_group_reasons(read_telemetry(spark, BACKLOG_SNAPSHOTS, path))
