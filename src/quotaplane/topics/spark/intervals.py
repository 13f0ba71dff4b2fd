"""Per topic and interval totals, and the dropped-request log, as Spark transforms of the decisions.

Same rules as `quotaplane.topics.engine.intervals`: intervals `[start, start + interval_ms)` with
`start = ts_ms - pmod(ts_ms, interval_ms)`, rates `bytes * 1000.0 / interval_ms` bytes/s.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from quotaplane.topics.config import MESSAGE_MAX_BYTES, TOTAL_THRESHOLD
from quotaplane.topics.engine.decision import ACCEPTED, ERROR, REASON_TOO_LARGE, THROTTLED
from quotaplane.topics.engine.intervals import DROPPED_COLUMNS, INTERVAL_COLUMNS


def topic_intervals(interval_ms: int) -> Callable[[DataFrame], DataFrame]:
    """Decisions -> one row per (broker_id, topic, interval_start_ms) (`INTERVAL_COLUMNS`)."""

    def total(kind: str, what: Column) -> Column:
        return F.sum(F.when(F.col("decision") == kind, what).otherwise(F.lit(0).cast("long")))

    def transform(decisions: DataFrame) -> DataFrame:
        start = (F.col("ts_ms") - F.pmod(F.col("ts_ms"), F.lit(interval_ms).cast("long"))).alias(
            "interval_start_ms")
        counts = decisions.groupBy("broker_id", "topic", start).agg(
            F.count(F.lit(1)).alias("requests"),
            *[total(kind, F.lit(1).cast("long")).alias(f"{name}_requests")
              for kind, name in ((ACCEPTED, "accepted"), (THROTTLED, "throttled"), (ERROR, "error"))],
            *[total(kind, F.col("bytes")).alias(f"{name}_bytes")
              for kind, name in ((ACCEPTED, "accepted"), (THROTTLED, "throttled"), (ERROR, "error"))],
            F.max("total_rate").alias("max_total_rate"),
            F.max("topic_rate").alias("max_topic_rate"),
            F.min("topic_threshold").alias("min_topic_threshold"),
            F.max("topic_threshold").alias("max_topic_threshold"),
        )
        rates = [(F.col(f"{name}_bytes") * 1000.0 / F.lit(interval_ms)).alias(f"{name}_rate")
                 for name in ("accepted", "throttled", "error")]
        return counts.select("*", *rates).select(*INTERVAL_COLUMNS)

    return transform


def dropped_log(message_max_bytes: int) -> Callable[[DataFrame], DataFrame]:
    """Decisions -> the throttled and error requests with their log message (`DROPPED_COLUMNS`)."""

    def transform(decisions: DataFrame) -> DataFrame:
        too_large = F.format_string(
            f"record batch of %d bytes exceeds {MESSAGE_MAX_BYTES}={message_max_bytes}", F.col("bytes"))
        quota = F.format_string(
            f"broker bytes-in rate above {TOTAL_THRESHOLD}=%d and topic %s bytes-in rate above its %s "
            "threshold %d", F.col("total_threshold"), F.col("topic"), F.col("threshold_source"),
            F.col("topic_threshold"))
        message = F.when(F.col("reason") == REASON_TOO_LARGE, too_large).otherwise(quota)
        return (decisions.where(F.col("decision") != ACCEPTED)
                .select("*", message.alias("message")).select(*DROPPED_COLUMNS))

    return transform
