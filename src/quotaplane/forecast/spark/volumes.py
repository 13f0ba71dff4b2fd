"""Volume forecasts with Spark: the twin of `quotaplane.forecast.engine.volumes`."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from quotaplane.forecast.config import ForecastSettings
from quotaplane.forecast.spark.replicas import growths
from quotaplane.forecast.spark.timing import band, seconds_to
from quotaplane.forecast.spark.trend import point_aggregates, trend_columns, with_span
from quotaplane.storage.config import StorageConfig
from quotaplane.storage.spark import limits

VOLUME = ("cluster", "broker_id", "log_dir")
COLUMNS = ("cluster", "broker_id", "log_dir", "at_ms", "observed_ts_ms", "total_bytes", "available_bytes",
           "soft_threshold_bytes", "hard_threshold_bytes", "method", "growth_bytes_per_second",
           "recent_growth_bytes_per_second", "acceleration_bytes_per_second_squared", "seconds_to_soft",
           "seconds_to_hard", "seconds_to_full", "low", "high", "top_contributors", "top_partitions")
TOPICS_TYPE = "array<struct<topic:string,share:double>>"
PARTITIONS_TYPE = "array<struct<topic:string,partition:bigint,share:double>>"


def in_window(df: DataFrame, ts: str, at_ms: int, window_ms: int) -> DataFrame:
    return df.where((F.col(ts) > F.lit(at_ms - window_ms)) & (F.col(ts) <= F.lit(at_ms)))


def volume_states(volumes: DataFrame) -> DataFrame:
    """Per volume: its last observation and the trend of its used bytes (one point per time: the
    least available bytes, then the least total)."""
    least = F.min(F.struct("available_bytes", "total_bytes")).alias("_p")
    points = (volumes.groupBy(*VOLUME, "ts").agg(least)
              .select(*VOLUME, "ts", F.col("_p.available_bytes").alias("available_bytes"),
                      F.col("_p.total_bytes").alias("total_bytes"))
              .withColumn("_used", F.col("total_bytes") - F.col("available_bytes")))
    state = F.struct(F.col("ts").alias("ts"), F.col("available_bytes").alias("a"),
                     F.col("total_bytes").alias("t"))
    agg = with_span(points, VOLUME).groupBy(*VOLUME).agg(*point_aggregates("ts", "_used"),
                                                         F.max(state).alias("_s"))
    rate, recent = trend_columns()
    return agg.select(*VOLUME, F.col("_s.ts").alias("observed_ts_ms"), F.col("_s.a").alias("available_bytes"),
                      F.col("_s.t").alias("total_bytes"), rate.alias("_vrate"), recent.alias("_vrecent"))


def _in_order_sum(items: str, field: str) -> Column:
    """The sum of `field` over the array `items` from 0.0, in the array's order (the reference's)."""
    return F.expr(f"aggregate({items}, CAST(0.0 AS DOUBLE), (acc, x) -> acc + x.{field})")


def _top(items: str, names: list[str], top: int) -> Column:
    """The first `top` entries of `items` (structs of `names` and `g`) by positive `g`, largest first
    (ties by name), as structs of `names` and `share` (their `g` over the sum of the positive ones,
    summed in name order)."""
    positive = f"filter({items}, x -> x.g > 0.0)"
    total = f"aggregate({positive}, CAST(0.0 AS DOUBLE), (acc, x) -> acc + x.g)"
    ties = " ".join(f"WHEN l.{n} < r.{n} THEN -1 WHEN l.{n} > r.{n} THEN 1" for n in names)
    order = f"(l, r) -> CASE WHEN l.g > r.g THEN -1 WHEN l.g < r.g THEN 1 {ties} ELSE 0 END"
    fields = ", ".join(f"x.{n} AS {n}" for n in names)
    return F.expr(f"transform(slice(array_sort({positive}, {order}), 1, {top}), "
                  f"x -> struct({fields}, x.g / {total} AS share))")


def replica_totals(sizes: DataFrame, top: int, window_start_ms: int) -> DataFrame:
    """Per volume: the summed growth of the replicas of its latest partition round and its top
    contributors. Every sum runs over arrays sorted as the reference engine sorts (by topic, then
    partition), so both engines give the same doubles."""
    grown = growths(sizes, window_start_ms).where(F.col("last_ts") > F.lit(window_start_ms))
    latest = grown.select("*", F.max("last_ts").over(Window.partitionBy(*VOLUME)).alias("_latest"))
    current = latest.where(F.col("last_ts") == F.col("_latest"))
    replica = F.struct("topic", "partition", "rate", "recent", "acceleration")
    per_topic = (current.groupBy(*VOLUME, "topic")
                 .agg(F.array_sort(F.collect_list(replica)).alias("_r"))
                 .select(*VOLUME, "topic", "_r", _in_order_sum("_r", "rate").alias("g")))
    entry = F.struct("topic", "_r", "g")
    per_volume = per_topic.groupBy(*VOLUME).agg(F.array_sort(F.collect_list(entry)).alias("_t"))
    replicas = "flatten(transform(_t, t -> t._r))"
    partitions = "transform(" + replicas + ", x -> struct(x.topic AS topic, x.partition AS partition, " \
                 "x.rate AS g))"
    return per_volume.select(
        *VOLUME, _in_order_sum(replicas, "rate").alias("_prate"),
        _in_order_sum(replicas, "recent").alias("_precent"),
        _in_order_sum(replicas, "acceleration").alias("_pacc"),
        _top("_t", ["topic"], top).alias("top_contributors"),
        _top(partitions, ["topic", "partition"], top).alias("top_partitions"))


def forecast_volumes(volumes: DataFrame, sizes: DataFrame | None, config: StorageConfig | None,
                     settings: ForecastSettings, at_ms: int) -> DataFrame:
    """The `storage_forecast` table (columns `COLUMNS`) of the volumes observed in the window."""
    states = volume_states(in_window(volumes, "ts", at_ms, settings.window_ms))
    if sizes is not None:
        history = in_window(sizes, "ts", at_ms, settings.history_ms)
        totals = replica_totals(history, settings.top, at_ms - settings.window_ms)
        states = states.join(totals, list(VOLUME), "left")
    else:
        states = states.select("*", F.lit(None).cast("double").alias("_prate"),
                               F.lit(None).cast("double").alias("_precent"),
                               F.lit(None).cast("double").alias("_pacc"),
                               F.lit(None).cast(TOPICS_TYPE).alias("top_contributors"),
                               F.lit(None).cast(PARTITIONS_TYPE).alias("top_partitions"))
    by_parts = F.col("_prate").isNotNull()
    growth = F.when(by_parts, F.col("_prate")).otherwise(F.col("_vrate"))
    recent = F.when(by_parts, F.col("_precent")).otherwise(F.col("_vrecent"))
    acceleration = F.when(by_parts, F.col("_pacc")).otherwise(F.lit(0.0))
    df = states.select("*", growth.alias("g"), recent.alias("gr"), acceleration.alias("acc"),
                       F.when(by_parts, F.lit("partitions")).otherwise(F.lit("volume")).alias("method"))
    return df.select(*_times(config, settings, at_ms)).select(*COLUMNS)


def _times(config: StorageConfig | None, settings: ForecastSettings, at_ms: int) -> list[Column]:
    horizon = settings.horizon_seconds
    total, avail = F.col("total_bytes"), F.col("available_bytes")
    available = avail.cast("double")
    g, gr, acc = F.col("g"), F.col("gr"), F.col("acc")
    slow, fast = band(g, gr)
    full = avail <= 0
    none = F.lit(None).cast("double")
    if config is not None and config.hard is not None and config.soft is not None:
        soft_t = limits.threshold_bytes(config.soft, total)
        hard_t = limits.threshold_bytes(config.hard, total)
        soft_hit = limits.breached(config.soft, total, avail)
        hard_hit = limits.breached(config.hard, total, avail)
        to_soft = seconds_to(soft_hit, available - soft_t, g, horizon, acc)
        to_hard = seconds_to(hard_hit, available - hard_t, g, horizon, acc)
        level_hit, distance = hard_hit, available - hard_t
    else:
        soft_t = hard_t = to_soft = to_hard = none
        level_hit, distance = full, available
    low = seconds_to(level_hit, distance, fast, horizon, acc)
    high = seconds_to(level_hit, distance, slow, horizon)
    return [*VOLUME, F.lit(at_ms).cast("long").alias("at_ms"), "observed_ts_ms", "total_bytes",
            "available_bytes",
            soft_t.alias("soft_threshold_bytes"), hard_t.alias("hard_threshold_bytes"), "method",
            g.alias("growth_bytes_per_second"), gr.alias("recent_growth_bytes_per_second"),
            acc.alias("acceleration_bytes_per_second_squared"),
            to_soft.alias("seconds_to_soft"), to_hard.alias("seconds_to_hard"),
            seconds_to(full, available, g, horizon, acc).alias("seconds_to_full"), low.alias("low"),
            high.alias("high"),
            F.coalesce("top_contributors", F.array().cast(TOPICS_TYPE)).alias("top_contributors"),
            F.coalesce("top_partitions", F.array().cast(PARTITIONS_TYPE)).alias("top_partitions")]
