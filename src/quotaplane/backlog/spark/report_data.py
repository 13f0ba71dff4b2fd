"""The report's aggregates, computed with Spark and collected small (one row per topic, a few
plotted series of at most `MAX_POINTS` time buckets, the top holders of the oldest message)."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from quotaplane.backlog.engine.model import SIZE, TIME
from quotaplane.backlog.report import BacklogReportData

PLOTTED_TOPICS = 6
MAX_POINTS = 1500
TOP_HOLDERS = 15


def topic_summary(checks: DataFrame) -> DataFrame:
    """One row per topic (see `BacklogReportData.topics`), most urgent first."""
    last = Window.partitionBy("topic").orderBy(F.col("ts_ms").desc())
    latest = (checks.withColumn("_r", F.row_number().over(last)).where(F.col("_r") == 1)
              .select("topic", F.col("backlog_age_seconds").alias("latest_age"),
                      F.col("backlog_size_bytes").alias("latest_size"), "oldest_subscription",
                      "size_evictions_total", "time_evictions_total"))
    agg = checks.groupBy("topic").agg(
        F.first("namespace").alias("namespace"), F.count(F.lit(1)).alias("ticks"),
        F.max("backlog_age_seconds").alias("max_age"), F.max("time_limit").alias("time_limit"),
        F.max("size_limit").alias("size_limit"), F.max("backlog_size_bytes").alias("max_size"),
        F.count(F.when(F.col("exceeded") == SIZE, 1)).alias("size_exceeded_ticks"),
        F.count(F.when(F.col("exceeded") == TIME, 1)).alias("time_exceeded_ticks"))
    usage = F.when(F.col("time_limit") > 0, F.col("max_age") / F.col("time_limit"))
    return (agg.join(latest, "topic")
            .withColumnRenamed("size_evictions_total", "size_evictions")
            .withColumnRenamed("time_evictions_total", "time_evictions")
            .withColumn("age_usage", usage)
            .orderBy(F.col("age_usage").desc_nulls_last(), F.col("max_age").desc_nulls_last(), "topic"))


def _bucket(checks: DataFrame) -> tuple[DataFrame, Any]:
    bounds = checks.agg(F.min("ts_ms").alias("lo"), F.max("ts_ms").alias("hi")).first()
    lo, hi = (bounds["lo"], bounds["hi"]) if bounds and bounds["lo"] is not None else (0, 0)
    width = max(1, -(-(hi - lo + 1) // MAX_POINTS))
    return checks.withColumn("_bucket", F.floor((F.col("ts_ms") - F.lit(lo)) / F.lit(width))), width


def collect_report_data(checks: DataFrame, kpis: list[tuple[str, Any]],
                        notes: list[str]) -> BacklogReportData:
    """Collect the report aggregates of the per-tick checks (with counters)."""
    topics = topic_summary(checks).toPandas()
    plotted = [t for t in topics["topic"].head(PLOTTED_TOPICS)] if len(topics) else []
    bucketed, _ = _bucket(checks)
    series = (bucketed.where(F.col("topic").isin(plotted))
              .groupBy("topic", "_bucket")
              .agg(F.min("ts_ms").alias("ts_ms"), F.max("backlog_age_seconds").alias("age"),
                   F.max("time_limit").alias("time_limit"))
              .drop("_bucket").toPandas())
    def runs(quota_type: str) -> Any:
        return F.count(F.when(F.col("eviction_run") & (F.col("exceeded") == quota_type), 1))

    evictions = (bucketed.groupBy("_bucket")
                 .agg(F.min("ts_ms").alias("ts_ms"), runs(SIZE).alias("size_runs"),
                      runs(TIME).alias("time_runs"))
                 .drop("_bucket").toPandas())
    holders = (checks.where(F.col("oldest_subscription").isNotNull())
               .groupBy("topic", F.col("oldest_subscription").alias("subscription"))
               .agg(F.count(F.lit(1)).alias("ticks"))
               .orderBy(F.col("ticks").desc(), "topic", "subscription").limit(TOP_HOLDERS).toPandas())
    return BacklogReportData(kpis, topics, series, evictions, holders, notes)
