"""Backlog snapshots into Spark: the reader's row rules, then the group rules of a check tick.

Rows that pass the row rules are checked together per (tick, topic): a subscription seen twice
at one tick, or rows that disagree on `partitioned_topic`, quarantine every row of that group
(the reference reader rejects the same files). `read == used + quarantined` still holds.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from quotaplane.telemetry.backlog import BACKLOG_SNAPSHOTS, DUPLICATE_REASON, PARENT_CONFLICT_REASON
from quotaplane.telemetry.readers import REASON, ReadCounts, read_telemetry

FIELDS = BACKLOG_SNAPSHOTS.field_names


@dataclass
class SnapshotInput:
    """The used snapshots and the quarantined rows (reader rules and group rules together)."""

    source: str
    checked: DataFrame  # every row, typed, with `reason` (null when used) and `_row`

    @property
    def used(self) -> DataFrame:
        return self.checked.where(F.col(REASON).isNull()).select(*FIELDS)

    @property
    def quarantined(self) -> DataFrame:
        return self.checked.where(F.col(REASON).isNotNull()).select(
            F.lit(self.source).alias("input"), F.lit(BACKLOG_SNAPSHOTS.name).alias("record"),
            F.col(REASON).alias("reason"), F.col("_row").alias("row"))

    def counts(self) -> ReadCounts:
        row = self.checked.agg(F.count(F.lit(1)).alias("read"),
                               F.count(F.when(F.col(REASON).isNull(), 1)).alias("used")).first()
        read, used = int(row["read"]), int(row["used"])
        return ReadCounts(self.source, read, used, read - used)


def with_group_rules(checked: DataFrame) -> DataFrame:
    """Add the group reasons to rows that passed the row rules (`reason` stays first-wins)."""
    ok = F.col(REASON).isNull()
    by_subscription = Window.partitionBy("ts_ms", "topic", "subscription")
    by_topic = Window.partitionBy("ts_ms", "topic")
    parent = F.when(ok, F.coalesce(F.col("partitioned_topic"), F.lit("")))
    group_reason = (F.when(F.count(F.when(ok, 1)).over(by_subscription) > 1, F.lit(DUPLICATE_REASON))
                    .when(F.min(parent).over(by_topic) != F.max(parent).over(by_topic),
                          F.lit(PARENT_CONFLICT_REASON)))
    return checked.withColumn(REASON, F.when(ok, group_reason).otherwise(F.col(REASON)))


def read_snapshots(spark: SparkSession, path: str) -> SnapshotInput:
    """Read and check the `backlog_snapshots` input at `path`."""
    result = read_telemetry(spark, BACKLOG_SNAPSHOTS, path)
    return SnapshotInput(path, with_group_rules(result.checked))
