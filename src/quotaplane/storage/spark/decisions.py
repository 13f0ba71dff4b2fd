"""The `storage_decisions` table in Spark: one row per round (per round and active broker for the
local source), equal to the reference engine's `evaluate_rounds` rows.

Spark-native: aggregations over one shuffle by round (`rounds`), column expressions, and for the
strimzi dialect window functions over each cluster's rounds in order (its validity is a
`last(..., ignorenulls)` window; its observation cache a bucketed range join). No Python UDF.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from quotaplane.storage.config import StorageConfig
from quotaplane.storage.engine.decisions import MISSING_BROKER_DATA
from quotaplane.storage.spark import limits
from quotaplane.storage.spark.rounds import (
    ROUND,
    VOLUME,
    active_brokers,
    broker_summary,
    counted_volumes,
    keyed_rows,
    over_active,
    round_columns,
    round_summary,
)

# Column order of the `storage_decisions` table.
DECISION_COLUMNS = [
    "ts", "ts_ms", "cluster", "poll_id", "round_window", "source", "observing_broker_id",
    "throttle_factor", "throttling_broker_id", "throttling_log_dir", "fallback_reason",
    "fallback_applied", "collection_error", "active_brokers", "active_log_dirs", "missing_brokers",
    "used_bytes", "effective_produce_limit",
]
WORST_FIELDS = ("volume_factor", "headroom", "broker_id", "log_dir")


def _worst_volume() -> Column:
    """Per broker: its throttling volume, the minimum of (factor, headroom, broker id, log dir)."""
    return F.min(F.when(F.col("kind") == VOLUME, F.struct(*WORST_FIELDS))).alias("worst")


@dataclass
class StorageEvaluation:
    """What one configuration gives: its decisions, and the counted volume observations of every
    round with the configuration's per-volume limit columns (for the summary and the report)."""

    decisions: DataFrame
    volumes: DataFrame
    keys: DataFrame

    def release(self) -> None:
        """Drop the persisted round rows (see `evaluate(..., persist=True)`)."""
        self.keys.unpersist()


LIMIT_COLUMNS = ("soft_threshold", "hard_threshold", "soft_breached", "hard_breached", "volume_factor",
                 "headroom")


def evaluate(config: StorageConfig, volumes: DataFrame, membership: DataFrame, errors: DataFrame,
             persist: bool = False, unnamed_errors: bool | None = None) -> StorageEvaluation:
    """Evaluate a whole history (typed telemetry as `read_telemetry(...).used` gives it).

    With `persist`, the keyed round rows (`rounds.keyed_rows`) that both `decisions` and `volumes`
    derive from are computed once (memory, spilling to disk) until `release()`. `unnamed_errors`:
    whether an error row names no cluster, when the caller knows (None: a Spark job finds out).
    """
    keys = keyed_rows(volumes, membership, errors, config.check_interval_ms, unnamed_errors)
    if persist:
        keys = keys.persist(StorageLevel.MEMORY_AND_DISK)
    counted = counted_volumes(keys)
    if config.evaluation == "cluster":
        decisions = _cluster(config, keys)
    elif config.evaluation == "local":
        decisions = _local(config, keys)
    else:
        decisions = _strimzi(config, keys, counted)
    if config.hard is not None and config.soft is not None:
        counted = counted.transform(limits.assess(config.soft, config.hard))
    extra = [c for c in LIMIT_COLUMNS if c in counted.columns]
    observed = counted.select(*round_columns()[:3], "broker_id", "log_dir", "total_bytes", "available_bytes",
                              *extra)
    return StorageEvaluation(decisions.select(*DECISION_COLUMNS), observed, keys)


def storage_decisions(config: StorageConfig, volumes: DataFrame, membership: DataFrame,
                      errors: DataFrame) -> DataFrame:
    """The `storage_decisions` rows of a history."""
    return evaluate(config, volumes, membership, errors).decisions


def _effective_produce(config: StorageConfig, factor: Column) -> Column:
    """`max(produce * factor, 1.0)`; unlimited stays unlimited (null) unless the factor is 0."""
    produce = config.quotas.produce
    if produce is None:
        return F.when(factor == 0.0, F.lit(1.0)).otherwise(F.lit(None).cast("double"))
    return F.greatest(F.lit(float(produce)) * factor, F.lit(1.0))


def _finish(config: StorageConfig, df: DataFrame, source: str) -> DataFrame:
    """Add the identity columns, the effective produce limit and the column types of the table."""
    return df.select(
        *round_columns(),
        F.lit(source).alias("source"),
        F.col("observing_broker_id").cast("long").alias("observing_broker_id"),
        F.col("throttle_factor").cast("double").alias("throttle_factor"),
        F.col("throttling_broker_id").cast("long").alias("throttling_broker_id"),
        F.col("throttling_log_dir").cast("string").alias("throttling_log_dir"),
        F.col("fallback_reason").cast("string").alias("fallback_reason"),
        F.col("fallback_applied").cast("boolean").alias("fallback_applied"),
        F.col("error").alias("collection_error"),
        F.col("active_brokers").cast("long").alias("active_brokers"),
        F.col("active_log_dirs").cast("long").alias("active_log_dirs"),
        F.col("missing_brokers").cast("long").alias("missing_brokers"),
        F.col("used_bytes").cast("long").alias("used_bytes"),
        _effective_produce(config, F.col("throttle_factor").cast("double")).alias("effective_produce_limit"),
    )


def _cluster(config: StorageConfig, keys: DataFrame) -> DataFrame:
    """spec dialect, cluster source: minimum volume factor over the active brokers, or the fallback."""
    assert config.soft is not None and config.hard is not None
    brokers = broker_summary(keys.transform(limits.assess(config.soft, config.hard)), _worst_volume())
    df = round_summary(brokers, over_active(F.min, F.col("worst")).alias("worst"))
    fallback = F.lit(config.fallback_factor)
    failed, missing = F.col("error").isNotNull(), F.col("missing_brokers") > 0
    computed = F.coalesce(F.col("worst.volume_factor"), F.lit(1.0))
    throttling = ~failed & ~missing & (computed < 1.0)
    reason = F.when(failed, F.col("error")).when(missing, F.lit(MISSING_BROKER_DATA))
    return _finish(config, df.select(
        "*",
        F.lit(None).cast("long").alias("observing_broker_id"),
        F.when(failed | missing, fallback).otherwise(computed).alias("throttle_factor"),
        F.when(throttling, F.col("worst.broker_id")).alias("throttling_broker_id"),
        F.when(throttling, F.col("worst.log_dir")).alias("throttling_log_dir"),
        reason.alias("fallback_reason"),
        reason.isNotNull().alias("fallback_applied"),
        F.lit(None).cast("long").alias("used_bytes"),
    ), "cluster")


def _local(config: StorageConfig, keys: DataFrame) -> DataFrame:
    """Deprecated local source: per round and active broker, the legacy rule on its own volumes."""
    brokers = broker_summary(keys)
    df = active_brokers(brokers).withColumnRenamed("log_dirs", "active_log_dirs")
    fallback = F.lit(config.fallback_factor)
    failed, missing = F.col("error").isNotNull(), F.col("used").isNull()
    computed = limits.legacy_factor(F.col("used"), config.legacy_soft_bytes, config.legacy_hard_bytes)
    reason = F.when(failed, F.col("error")).when(missing, F.lit(MISSING_BROKER_DATA))
    return _finish(config, df.select(
        "*",
        F.col("broker_id").alias("observing_broker_id"),
        F.when(failed | missing, fallback).otherwise(computed).alias("throttle_factor"),
        F.when(~failed & ~missing & (computed < 1.0), F.col("broker_id")).alias("throttling_broker_id"),
        F.lit(None).cast("string").alias("throttling_log_dir"),
        reason.alias("fallback_reason"),
        reason.isNotNull().alias("fallback_applied"),
        F.when(missing, 1).otherwise(0).alias("missing_brokers"),
        F.when(~failed, F.col("used")).alias("used_bytes"),
    ), "local")


def _strimzi(config: StorageConfig, keys: DataFrame, counted: DataFrame) -> DataFrame:
    """strimzi dialect: circuit breaker over the cached observations, strict validity, fallback once
    per transition (see `quotaplane.storage.engine.strimzi`)."""
    base = round_summary(broker_summary(keys))
    none_long, none_str = F.lit(None).cast("long"), F.lit(None).cast("string")
    common = [none_long.alias("observing_broker_id"), none_long.alias("used_bytes")]
    if not config.checks_enabled:
        return _finish(config, base.select(
            "*", *common, F.lit(1.0).alias("throttle_factor"), none_long.alias("throttling_broker_id"),
            none_str.alias("throttling_log_dir"), none_str.alias("fallback_reason"),
            F.lit(False).alias("fallback_applied")), "strimzi")

    in_order = Window.partitionBy("cluster").orderBy("round_ts", "is_window", "round_no")
    seq = base.select("*", F.row_number().over(in_order).alias("seq"))
    df = seq.join(_cached_worst(config, counted, seq), ["cluster", "seq"], "left")
    success = F.col("error").isNull()
    so_far = in_order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    # the factor in force (and its volume) is that of the last success; wrapped so that a success
    # with no throttling volume still replaces an earlier one
    carried = F.last(F.when(success, F.struct(
        F.coalesce(F.col("worst.volume_factor"), F.lit(1.0)).alias("factor"),
        F.when(F.col("worst.volume_factor") < 1.0, F.col("worst")).alias("worst"))), ignorenulls=True)
    valid_from = F.coalesce(F.last(F.when(success, F.col("round_ts")), ignorenulls=True).over(so_far),
                            F.min("round_ts").over(Window.partitionBy("cluster")))
    expired = ~success & ((F.col("round_ts") - valid_from) > F.lit(config.validity_expired_after_ms))
    df = df.select("*", carried.over(so_far).alias("carried"), expired.alias("expired"))
    first_expired = F.col("expired") & ~F.lag("expired", 1, False).over(in_order)
    df = df.select("*", first_expired.alias("fallback_applied"))
    reason = F.last(F.when(F.col("fallback_applied"), F.col("error")), ignorenulls=True).over(so_far)
    keep = ~F.col("expired")
    return _finish(config, df.select(
        "*", *common,
        F.when(F.col("expired"), F.lit(config.fallback_factor))
         .otherwise(F.coalesce(F.col("carried.factor"), F.lit(1.0))).alias("throttle_factor"),
        F.when(keep, F.col("carried.worst.broker_id")).alias("throttling_broker_id"),
        F.when(keep, F.col("carried.worst.log_dir")).alias("throttling_log_dir"),
        F.when(F.col("expired"), reason).alias("fallback_reason"),
    ), "strimzi")


def _cached_worst(config: StorageConfig, counted: DataFrame, seq: DataFrame) -> DataFrame:
    """Per successful round (`cluster`, `seq`): the worst volume of the observation cache.

    The cache at round r holds, per (broker, log dir), its latest observation made in a successful
    round j <= r with `ts_r - ts_j < evict` (an entry is evicted when `now >= observedAt + validity`).
    A volume observed in round r is its own entry. Only an observation whose volume is missing from
    the next successful round(s) is carried forward, to the successful rounds before its next
    observation and within the eviction time: a range join on time buckets of the eviction width
    (an equi-join), over those few observations only.
    """
    evict = config.validity_evicted_from_ms
    assert config.hard is not None
    ok = (seq.where(F.col("error").isNull())
          .select(*ROUND, "seq", "round_ts",
                  F.row_number().over(Window.partitionBy("cluster").orderBy("seq")).alias("ok_seq")))
    if evict <= 0:
        return ok.select("cluster", "seq", F.lit(None).cast(
            "struct<volume_factor:double,headroom:double,broker_id:bigint,log_dir:string>").alias("worst"))
    volume = Window.partitionBy("cluster", "broker_id", "log_dir").orderBy("ok_seq")
    obs = (counted.where(F.col("error").isNull())
           .select(*ROUND, "broker_id", "log_dir", "total_bytes", "available_bytes")
           .join(ok, ROUND)
           .transform(limits.assess(config.hard, config.hard))
           .select("cluster", "seq", "ok_seq", F.col("round_ts").alias("obs_ts"),
                   F.struct(*WORST_FIELDS).alias("w"), F.lead("ok_seq").over(volume).alias("next_ok_seq")))
    gaps = obs.where(F.col("next_ok_seq").isNull() | (F.col("next_ok_seq") > F.col("ok_seq") + 1))
    bucket = F.expr(f"(round_ts - pmod(round_ts, {evict}L)) div {evict}L")
    targets = ok.select("cluster", F.col("seq").alias("t_seq"), F.col("ok_seq").alias("t_ok_seq"),
                        F.col("round_ts").alias("t_ts"),
                        F.explode(F.array(bucket, bucket - 1)).alias("bucket"))
    carried = (gaps.select("*", F.expr(f"(obs_ts - pmod(obs_ts, {evict}L)) div {evict}L").alias("bucket"))
               .join(targets, ["cluster", "bucket"])
               .where((F.col("t_ok_seq") > F.col("ok_seq"))
                      & (F.col("next_ok_seq").isNull() | (F.col("t_ok_seq") < F.col("next_ok_seq")))
                      & (F.col("t_ts") - F.col("obs_ts") < evict))
               .select("cluster", F.col("t_seq").alias("seq"), "w"))
    cached = (obs.select("cluster", "seq", "w").unionByName(carried)
              .groupBy("cluster", "seq").agg(F.min("w").alias("worst")))
    return ok.select("cluster", "seq").join(cached, ["cluster", "seq"], "left")
