"""The small aggregates the topic summary, metrics and report need: one collected aggregate per
(broker, topic) of the decisions, and the interval series of the topics plotted (bounded sizes: at
most `PLOT_POINTS` points per topic, whatever the time span).

Both are hash aggregations (fixed-width buffers: the threshold source at the last request is taken
as a boolean `explicit`), so neither sorts the decisions.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from quotaplane.core.buckets import bucket_width
from quotaplane.topics.engine.decision import DECISIONS, DEFAULT_SHARE, ERROR, EXPLICIT, THROTTLED
from quotaplane.topics.report import TOP_TOPICS, TopicReportData

OVER_COLUMNS = ("broker_id", "topic", "first_throttled_ms", "last_throttled_ms", "throttled_requests",
                "throttled_bytes", "accepted_bytes", "max_topic_rate", "min_topic_threshold",
                "max_topic_threshold", "threshold_source")
ERROR_COLUMNS = ("broker_id", "topic", "error_requests", "error_bytes", "max_bytes")
PLOT_POINTS = 600  # points per plotted topic: a point spans one interval or a whole multiple of it
SERIES_COLUMNS = ("interval_start_ms", "broker_id", "topic", "max_topic_rate", "max_topic_threshold",
                  "throttled_bytes", "accepted_bytes")


def broker_topic_aggregate(decisions: DataFrame) -> DataFrame:
    """One row per (broker_id, topic): `<decision>_requests` and `<decision>_bytes` for each
    decision, first and last throttled time, the highest topic rate, the threshold range, whether
    the threshold at the last request was `explicit`, and the largest error batch (`max_bytes`)."""
    def of(decision: str, value: Any) -> Any:
        return F.when(F.col("decision") == decision, value)

    per_decision = [agg for d in DECISIONS for agg in (
        F.count(of(d, 1)).alias(f"{d}_requests"),
        F.coalesce(F.sum(of(d, F.col("bytes"))), F.lit(0).cast("long")).alias(f"{d}_bytes"))]
    return decisions.groupBy("broker_id", "topic").agg(
        *per_decision,
        F.min(of(THROTTLED, F.col("ts_ms"))).alias("first_throttled_ms"),
        F.max(of(THROTTLED, F.col("ts_ms"))).alias("last_throttled_ms"),
        F.max("topic_rate").alias("max_topic_rate"),
        F.min("topic_threshold").alias("min_topic_threshold"),
        F.max("topic_threshold").alias("max_topic_threshold"),
        F.max_by(F.col("threshold_source") == EXPLICIT, "ts_ms").alias("explicit"),
        F.max(of(ERROR, F.col("bytes"))).alias("max_bytes"),
    )


def broker_topic_totals(decisions: DataFrame) -> pd.DataFrame:
    """`broker_topic_aggregate` collected (one job), with `threshold_source` from `explicit`."""
    totals = broker_topic_aggregate(decisions).toPandas()
    totals["threshold_source"] = totals["explicit"].map({True: EXPLICIT, False: DEFAULT_SHARE})
    return totals


def decision_counts(totals: pd.DataFrame) -> list[dict[str, Any]]:
    """`{broker_id, topic, decision, requests, bytes}` per (broker, topic, decision) with requests."""
    return [{"broker_id": int(r["broker_id"]), "topic": r["topic"], "decision": d,
             "requests": int(r[f"{d}_requests"]), "bytes": int(r[f"{d}_bytes"])}
            for r in totals.to_dict("records") for d in DECISIONS if r[f"{d}_requests"]]


def point_ms(interval_ms: int, first_ms: int, last_ms: int) -> int:
    """The width of a plotted point: the interval, or the smallest whole multiple of it that puts
    the intervals from `first_ms` to `last_ms` into at most `PLOT_POINTS` points (aligned to the
    epoch, so a point may start before `first_ms`: one more point at most)."""
    return interval_ms * bucket_width(first_ms // interval_ms, last_ms // interval_ms, PLOT_POINTS)


def collect_report_data(totals: pd.DataFrame, intervals: DataFrame, interval_ms: int,
                        kpis: list[tuple[str, Any]], rejected: list[str],
                        notes: list[str], span: tuple[int, int] | None = None) -> TopicReportData:
    """The report's data from `broker_topic_totals` and the written intervals (one small job for
    the series of the `TOP_TOPICS` topics with the most throttled bytes, none when none is). Over
    `span` (the first and last request time) the series has a point per `point_ms` (the highest
    rate and threshold of its intervals, their bytes summed)."""
    width = point_ms(interval_ms, *span) if span is not None else interval_ms
    over = totals.loc[totals["throttled_requests"] > 0, list(OVER_COLUMNS)].reset_index(drop=True)
    over = over.astype({"first_throttled_ms": "int64", "last_throttled_ms": "int64"})
    errors = totals.loc[totals[f"{ERROR}_requests"] > 0].rename(
        columns={f"{ERROR}_requests": "error_requests", f"{ERROR}_bytes": "error_bytes"})
    errors = errors[list(ERROR_COLUMNS)].astype({"max_bytes": "int64"}).reset_index(drop=True)
    top = over.sort_values(["throttled_bytes", "broker_id", "topic"], ascending=[False, True, True]).head(
        TOP_TOPICS)
    if len(top):
        plotted = [(F.col("broker_id") == int(b)) & (F.col("topic") == t)
                   for b, t in zip(top["broker_id"], top["topic"], strict=True)]
        keep = plotted[0]
        for condition in plotted[1:]:
            keep = keep | condition
        start = F.col("interval_start_ms")
        point = (start - F.pmod(start, F.lit(width).cast("long"))).alias("interval_start_ms")
        series = (intervals.where(keep).groupBy(point, "broker_id", "topic")
                  .agg(F.max("max_topic_rate").alias("max_topic_rate"),
                       F.max("max_topic_threshold").alias("max_topic_threshold"),
                       F.sum("throttled_bytes").alias("throttled_bytes"),
                       F.sum("accepted_bytes").alias("accepted_bytes"))
                  .select(*SERIES_COLUMNS).toPandas()
                  .sort_values(["broker_id", "topic", "interval_start_ms"]).reset_index(drop=True))
    else:
        series = pd.DataFrame({c: [] for c in SERIES_COLUMNS})
    return TopicReportData(kpis, over, errors, series, width, rejected, notes)
