"""Backlog snapshots into Spark: the reader's row rules, then the group rules of a check tick.

Rows that pass the row rules are checked together per (tick, topic): a subscription seen twice
at one tick, or rows that disagree on `partitioned_topic`, quarantine every row of that group
(the reference reader rejects the same files). `read == used + quarantined` still holds.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from quotaplane.backlog.records import BACKLOG_SNAPSHOTS, DUPLICATE_REASON, PARENT_CONFLICT_REASON
from quotaplane.core.spark.readers import REASON, ReadResult, read_telemetry


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


def read_snapshots(spark: SparkSession, path: str) -> ReadResult:
    """Read and check the `backlog_snapshots` input at `path`: the reader's rules, then the group
    rules (its `used`, `quarantined` and `counts()` cover both)."""
    result = read_telemetry(spark, BACKLOG_SNAPSHOTS, path)
    return ReadResult(BACKLOG_SNAPSHOTS, path, with_group_rules(result.checked), result.fmt)
