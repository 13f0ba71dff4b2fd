"""Counters, topic stats, partitioned stats and metric rows as Spark transforms
(rules: `quotaplane.backlog.engine.stats`; spec: Public API and Metrics)."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from quotaplane.backlog.engine.model import SIZE, TIME
from quotaplane.backlog.names import PARTITION_PATTERN_JAVA

UNKNOWN_AGE = -1


def with_counters(topics: DataFrame) -> DataFrame:
    """Add `size_evictions_total` and `time_evictions_total`: eviction runs of the topic so far."""
    so_far = (
        Window.partitionBy("topic").orderBy("ts_ms").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    out = topics
    for quota_type in (SIZE, TIME):
        run = F.when(F.col("eviction_run") & (F.col("exceeded") == quota_type), 1).otherwise(0)
        out = out.withColumn(f"{quota_type}_evictions_total", F.sum(run).over(so_far).cast("long"))
    return out


def latest(topics: DataFrame) -> DataFrame:
    """Each topic's row at its last tick."""
    return (
        topics.withColumn("_last", F.max("ts_ms").over(Window.partitionBy("topic")))
        .where(F.col("ts_ms") == F.col("_last"))
        .drop("_last")
    )


def topic_stats(latest_rows: DataFrame) -> DataFrame:
    """PIP-323 topic stats fields per topic."""
    age = F.col("backlog_age_seconds")
    return latest_rows.select(
        "topic",
        "partitioned_topic",
        F.col("size_limit").alias("backlogQuotaLimitSize"),
        F.col("time_limit").alias("backlogQuotaLimitTime"),
        F.coalesce(age, F.lit(UNKNOWN_AGE).cast("long")).alias("oldestBacklogMessageAgeSeconds"),
        F.when(age.isNotNull(), F.col("oldest_subscription")).alias("oldestBacklogMessageSubscriptionName"),
    )


def partitioned_stats(stats: DataFrame) -> DataFrame:
    """Partitioned-topic stats: the partition with the largest age wins (strictly larger than -1,
    ties to the first partition in partition-index order); limits copied."""
    index = F.regexp_extract(F.col("topic"), PARTITION_PATTERN_JAVA, 1)
    order = Window.partitionBy("partitioned_topic").orderBy(
        F.col("oldestBacklogMessageAgeSeconds").desc(), F.col("_index").asc_nulls_last(), F.col("topic").asc()
    )
    age = F.col("oldestBacklogMessageAgeSeconds")
    return (
        stats.where(F.col("partitioned_topic").isNotNull())
        .withColumn("_index", F.when(index != "", index.cast("long")))
        .withColumn("_rank", F.row_number().over(order))
        .where(F.col("_rank") == 1)
        .select(
            F.col("partitioned_topic").alias("topic"),
            "backlogQuotaLimitSize",
            "backlogQuotaLimitTime",
            F.when(age > UNKNOWN_AGE, age)
            .otherwise(F.lit(UNKNOWN_AGE).cast("long"))
            .alias("oldestBacklogMessageAgeSeconds"),
            F.when(age > UNKNOWN_AGE, F.col("oldestBacklogMessageSubscriptionName")).alias(
                "oldestBacklogMessageSubscriptionName"
            ),
        )
    )


def topic_metric_rows(latest_rows: DataFrame) -> DataFrame:
    """Per-topic metric values (columns of `TopicMetrics`)."""
    return latest_rows.select(
        "namespace",
        "topic",
        "backlog_size_bytes",
        F.coalesce(F.col("backlog_age_seconds"), F.lit(UNKNOWN_AGE).cast("long")).alias(
            "backlog_age_seconds"
        ),
        "size_limit",
        "time_limit",
        F.col("size_evictions_total").alias("size_evictions"),
        F.col("time_evictions_total").alias("time_evictions"),
    )


def namespace_metric_rows(topic_metrics: DataFrame) -> DataFrame:
    """Per-namespace aggregation (`AggregatedNamespaceStats`): sums, and maxima from 0 / -1."""
    return topic_metrics.groupBy("namespace").agg(
        F.lit(None).cast("string").alias("topic"),
        F.sum("backlog_size_bytes").cast("long").alias("backlog_size_bytes"),
        F.lit(None).cast("long").alias("backlog_age_seconds"),
        F.greatest(F.lit(0).cast("long"), F.max("size_limit")).alias("size_limit"),
        F.greatest(F.lit(-1).cast("long"), F.max("time_limit")).alias("time_limit"),
        F.sum("size_evictions").cast("long").alias("size_evictions"),
        F.sum("time_evictions").cast("long").alias("time_evictions"),
    )
