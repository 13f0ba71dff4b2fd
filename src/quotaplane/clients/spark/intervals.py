"""Per-interval rows and per-client standing in Spark, from the per-request decisions.

The rules of `quotaplane.clients.engine.intervals`, as aggregations: "at the last request"
values are `max_by(..., seq)` (seq is the processing order within a sharing group), throttle
time avg is over throttled requests, sums of recorded units are exact longs. Every aggregate
buffer is fixed-width (no struct, no string), so each is one hash aggregation.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from quotaplane.clients.engine.intervals import NEAR_PCT, OVER_PCT
from quotaplane.clients.engine.quota_types import QUOTA_VALUE_TYPES, REQUEST

KEY = ["config_id", "broker_id", "quota_type", "user", "client_id"]


def interval_rows(decisions: DataFrame, interval_ms: int, quota_value_metric: bool) -> DataFrame:
    """One row per (config, broker, quota type, metric tags, interval) of recorded requests."""
    recorded = decisions.where(F.col("recorded")).select(
        "config_id", "broker_id", "quota_type",
        F.col("tag_user").alias("user"), F.col("tag_client_id").alias("client_id"),
        (F.col("ts_ms") - F.pmod(F.col("ts_ms"), F.lit(interval_ms))).alias("interval_start_ms"),
        "value_units", "violated", "throttled", "throttle_time_ms", "rate", "quota_limit",
        "utilisation_pct", "throttle_factor", "tokens", "seq")
    rows = recorded.groupBy(*KEY, "interval_start_ms").agg(
        F.count(F.lit(1)).alias("requests"),
        F.sum("value_units").alias("_units"),
        F.count(F.when(F.col("violated"), 1)).alias("violated_requests"),
        F.count(F.when(F.col("throttled"), 1)).alias("throttled_requests"),
        F.sum(F.when(F.col("throttled"), F.col("throttle_time_ms")).otherwise(0)).alias(
            "throttle_time_total_ms"),
        F.max("throttle_time_ms").cast("long").alias("throttle_time_max_ms"),
        F.max_by("rate", "seq").alias("rate"),
        F.max("rate").alias("rate_max"),
        F.max_by("quota_limit", "seq").alias("quota_limit"),
        F.min("quota_limit").alias("quota_limit_min"),
        F.max_by("utilisation_pct", "seq").alias("utilisation_pct"),
        F.max("utilisation_pct").alias("utilisation_max_pct"),
        F.min("throttle_factor").alias("throttle_factor_min"),
        F.max_by("tokens", "seq").alias("tokens"),
    )
    value_total = F.when(F.col("quota_type") == REQUEST, F.col("_units").cast("double") / F.lit(1e6)) \
        .otherwise(F.col("_units").cast("double"))
    avg = F.when(F.col("throttled_requests") > 0,
                 F.col("throttle_time_total_ms").cast("double") / F.col("throttled_requests"))
    columns = [
        *KEY, "interval_start_ms", "requests", value_total.alias("value_total"), "violated_requests",
        "throttled_requests", F.col("throttle_time_total_ms").cast("long").alias("throttle_time_total_ms"),
        "throttle_time_max_ms", F.coalesce(avg, F.lit(0.0)).alias("throttle_time_avg_ms"), "rate",
        "rate_max", "quota_limit", "quota_limit_min", "utilisation_pct", "utilisation_max_pct",
        "throttle_factor_min", "tokens",
    ]
    if quota_value_metric:
        columns.append(F.when(F.col("quota_type").isin(*sorted(QUOTA_VALUE_TYPES)), F.col("quota_limit"))
                       .alias("quota_value"))
    return rows.select(*columns)


STANDING_COLUMNS = [*KEY, "requests", "violated_requests", "throttled_requests", "throttle_time_total_ms",
                    "rate_max", "quota_limit_min", "utilisation_max_pct", "standing"]
# the gauges of a sharing group's last interval (the metrics), besides its standing
LAST_FIELDS = ["rate", "throttle_time_avg_ms", "quota_limit", "utilisation_pct", "tokens"]


def standing_rows(intervals: DataFrame, extra: bool = False) -> DataFrame:
    """One row per (config, broker, quota type, metric tags) over the whole input (`STANDING_COLUMNS`).

    With `extra`, also what the summary, metrics and report need of each group, in the same
    aggregation: `last_<field>` of its last interval (`LAST_FIELDS`, and `quota_value` when the
    intervals have it), `factor_min` (the lowest storage factor), `factor_intervals` (intervals
    with a factor below 1) and `throttled_under_factor` (requests throttled in those)."""
    below = F.col("throttle_factor_min") < 1.0
    last = [*LAST_FIELDS, *(["quota_value"] if "quota_value" in intervals.columns else [])]
    extras = [
        *[F.max_by(name, "interval_start_ms").alias(f"last_{name}") for name in last],
        F.min("throttle_factor_min").alias("factor_min"),
        F.count(F.when(below, 1)).alias("factor_intervals"),
        F.sum(F.when(below, F.col("throttled_requests")).otherwise(0)).alias("throttled_under_factor"),
    ] if extra else []
    rows = intervals.groupBy(*KEY).agg(
        F.sum("requests").alias("requests"),
        F.sum("violated_requests").alias("violated_requests"),
        F.sum("throttled_requests").alias("throttled_requests"),
        F.sum("throttle_time_total_ms").alias("throttle_time_total_ms"),
        F.max("rate_max").alias("rate_max"),
        F.min("quota_limit_min").alias("quota_limit_min"),
        F.max("utilisation_max_pct").alias("utilisation_max_pct"),
        *extras,
    )
    u = F.col("utilisation_max_pct")
    standing = (F.when(u.isNull(), F.lit("unlimited")).when(u > OVER_PCT, F.lit("over"))
                .when(u >= NEAR_PCT, F.lit("near")).otherwise(F.lit("under")))
    return rows.withColumn("standing", standing)
