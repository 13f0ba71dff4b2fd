"""Backlog forecasts with Spark: the twin of `quotaplane.forecast.engine.backlog`, over the
backlog stage's `backlog_checks` (one row per tick and topic)."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from quotaplane.forecast.config import ForecastSettings
from quotaplane.forecast.spark.timing import band, earliest, seconds_to
from quotaplane.forecast.spark.trend import point_aggregates, trend_columns, with_span
from quotaplane.forecast.spark.volumes import in_window

COLUMNS = ("topic", "namespace", "at_ms", "observed_ts_ms", "backlog_size_bytes", "size_limit",
           "backlog_age_seconds", "time_limit", "size_growth_bytes_per_second", "age_growth_per_second",
           "seconds_to_size_quota", "seconds_to_time_quota", "seconds_to_quota", "quota_type", "low", "high")


def _size_time(size: Column, limit: Column, growth: Column, horizon: float) -> Column:
    return F.when(limit >= 0, seconds_to(size >= limit, limit - size, growth, horizon))


def _age_time(age: Column, limit: Column, growth: Column, horizon: float) -> Column:
    return F.when(limit > 0, seconds_to(age > limit, limit - age, growth, horizon))


def forecast_backlogs(checks: DataFrame, settings: ForecastSettings, at_ms: int) -> DataFrame:
    """The `backlog_forecast` table of the topics with a quota, checked in the window."""
    points = (in_window(checks, "ts_ms", at_ms, settings.window_ms)
              .select("ts_ms", "topic", "namespace", "backlog_size_bytes", "size_limit", "time_limit",
                      F.coalesce(F.col("backlog_age_seconds"), F.lit(0)).cast("long").alias("_age"),
                      F.col("backlog_age_seconds").cast("long").alias("_observed_age")))
    last = F.struct(F.col("ts_ms").alias("ts"), "namespace", "size_limit", "time_limit", "_observed_age")
    agg = with_span(points, ["topic"], "ts_ms").groupBy("topic").agg(
        *point_aggregates("ts_ms", "backlog_size_bytes", "s_"), *point_aggregates("ts_ms", "_age", "a_"),
        F.max(last).alias("_last"))
    size_rate, size_recent = trend_columns("s_")
    age_rate, age_recent = trend_columns("a_")
    df = agg.select(
        "topic", F.col("_last.namespace").alias("namespace"), F.col("_last.ts").alias("observed_ts_ms"),
        F.col("s_last.v").alias("backlog_size_bytes"), F.col("_last.size_limit").alias("size_limit"),
        F.col("_last._observed_age").alias("backlog_age_seconds"), F.col("a_last.v").alias("_age_last"),
        F.col("_last.time_limit").alias("time_limit"),
        size_rate.alias("size_growth_bytes_per_second"), size_recent.alias("_size_recent"),
        age_rate.alias("age_growth_per_second"), age_recent.alias("_age_recent"),
    ).where((F.col("size_limit") >= 0) | (F.col("time_limit") > 0))
    h = settings.horizon_seconds
    size, age = F.col("backlog_size_bytes"), F.col("_age_last")
    s_limit, t_limit = F.col("size_limit"), F.col("time_limit")
    s_rate, a_rate = F.col("size_growth_bytes_per_second"), F.col("age_growth_per_second")
    s_slow, s_fast = band(s_rate, F.col("_size_recent"))
    a_slow, a_fast = band(a_rate, F.col("_age_recent"))
    df = df.select("*", _size_time(size, s_limit, s_rate, h).alias("seconds_to_size_quota"),
                   _age_time(age, t_limit, a_rate, h).alias("seconds_to_time_quota"),
                   earliest(_size_time(size, s_limit, s_fast, h),
                            _age_time(age, t_limit, a_fast, h)).alias("low"),
                   earliest(_size_time(size, s_limit, s_slow, h),
                            _age_time(age, t_limit, a_slow, h)).alias("high"))
    first = earliest(F.col("seconds_to_size_quota"), F.col("seconds_to_time_quota"))
    df = df.select("*", first.alias("seconds_to_quota"), F.lit(at_ms).cast("long").alias("at_ms"))
    kind = (F.when(F.col("seconds_to_quota").isNull(), F.lit(None).cast("string"))
            .when(F.col("seconds_to_size_quota") == F.col("seconds_to_quota"), F.lit("size"))
            .otherwise(F.lit("time")))
    return df.select("*", kind.alias("quota_type")).select(*COLUMNS)
