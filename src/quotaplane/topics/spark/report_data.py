"""The small aggregates the topic report needs, computed with Spark and collected (bounded sizes)."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from quotaplane.topics.engine.decision import ACCEPTED, ERROR, THROTTLED
from quotaplane.topics.report import TOP_TOPICS, TopicReportData


def collect_report_data(decisions: DataFrame, intervals: DataFrame, interval_ms: int,
                        kpis: list[tuple[str, Any]], rejected: list[str],
                        notes: list[str]) -> TopicReportData:
    throttled = F.col("decision") == THROTTLED

    def when(cond: Any, value: Any) -> Any:
        return F.when(cond, value)

    over = (decisions.groupBy("broker_id", "topic").agg(
        F.min(when(throttled, F.col("ts_ms"))).alias("first_throttled_ms"),
        F.max(when(throttled, F.col("ts_ms"))).alias("last_throttled_ms"),
        F.count(when(throttled, 1)).alias("throttled_requests"),
        F.coalesce(F.sum(when(throttled, F.col("bytes"))), F.lit(0)).alias("throttled_bytes"),
        F.coalesce(F.sum(when(F.col("decision") == ACCEPTED, F.col("bytes"))), F.lit(0))
        .alias("accepted_bytes"),
        F.max("topic_rate").alias("max_topic_rate"),
        F.min("topic_threshold").alias("min_topic_threshold"),
        F.max("topic_threshold").alias("max_topic_threshold"),
        F.max_by("threshold_source", "ts_ms").alias("threshold_source"),
    ).where(F.col("throttled_requests") > 0))
    over_pd = over.toPandas()
    errors = (decisions.where(F.col("decision") == ERROR).groupBy("broker_id", "topic").agg(
        F.count(F.lit(1)).alias("error_requests"), F.sum("bytes").alias("error_bytes"),
        F.max("bytes").alias("max_bytes"))).toPandas()
    top = over.orderBy(F.col("throttled_bytes").desc(), "broker_id", "topic").limit(TOP_TOPICS) \
        .select("broker_id", "topic")
    series = (intervals.join(F.broadcast(top), ["broker_id", "topic"])
              .select("interval_start_ms", "broker_id", "topic", "max_topic_rate", "max_topic_threshold",
                      "throttled_bytes", "accepted_bytes")
              .orderBy("broker_id", "topic", "interval_start_ms").toPandas())
    return TopicReportData(kpis, over_pd, errors, series, interval_ms, rejected, notes)
