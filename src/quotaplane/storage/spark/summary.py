"""What a storage evaluation amounts to: small results computed in Spark from the decisions and the
counted volume observations, for `summary.json`, the metrics and the report.

A *unit* is what decides on its own: a cluster (cluster source, strimzi dialect) or a broker of a
cluster (local source, `observing_broker_id`).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from quotaplane.core.javamath import LONG_MAX
from quotaplane.storage.config import StorageConfig
from quotaplane.storage.metrics import StorageMetricState
from quotaplane.storage.summary import EvaluationSummary, iso

UNIT = ["cluster", "observing_broker_id"]
PLOT_BUCKETS = 600


def _unit_window() -> Window:
    return Window.partitionBy(*UNIT).orderBy("ts_ms", "poll_id", "round_window")


def throttled_time(decisions: DataFrame) -> list[dict[str, Any]]:
    """Per unit: decisions, the time with factor < 1 and with factor == 0 (each round lasts until the
    unit's next round; the last round has no duration), first throttled and first blocked time."""
    nxt = F.lead("ts_ms").over(_unit_window())
    d = decisions.select(*UNIT, "ts_ms", "throttle_factor", (nxt - F.col("ts_ms")).alias("span"))
    throttled, blocked = F.col("throttle_factor") < 1.0, F.col("throttle_factor") == 0.0
    rows = d.groupBy(*UNIT).agg(
        F.count(F.lit(1)).alias("decisions"),
        F.min("ts_ms").alias("first_ms"), F.max("ts_ms").alias("last_ms"),
        F.coalesce(F.sum(F.when(throttled, F.col("span"))), F.lit(0)).alias("throttled_ms"),
        F.coalesce(F.sum(F.when(blocked, F.col("span"))), F.lit(0)).alias("blocked_ms"),
        F.min(F.when(throttled, F.col("ts_ms"))).alias("first_throttled_ms"),
        F.min(F.when(blocked, F.col("ts_ms"))).alias("first_blocked_ms"),
        F.min("throttle_factor").alias("lowest_factor"),
    ).orderBy(*UNIT).collect()
    return [{
        "cluster": r["cluster"], "observing_broker_id": r["observing_broker_id"], "decisions": r["decisions"],
        "from": iso(r["first_ms"]), "to": iso(r["last_ms"]),
        "time_throttled_seconds": r["throttled_ms"] / 1000, "time_blocked_seconds": r["blocked_ms"] / 1000,
        "first_throttled": iso(r["first_throttled_ms"]), "first_blocked": iso(r["first_blocked_ms"]),
        "lowest_factor": r["lowest_factor"],
    } for r in rows]


def fallbacks(decisions: DataFrame) -> dict[str, dict[str, int]]:
    """By reason: times the fallback was applied (the counter) and rounds decided by the fallback."""
    rows = (decisions.where(F.col("fallback_reason").isNotNull()).groupBy("fallback_reason")
            .agg(F.count(F.when(F.col("fallback_applied"), 1)).alias("applied"),
                 F.count(F.lit(1)).alias("rounds"))
            .orderBy("fallback_reason").collect())
    return {r["fallback_reason"]: {"applied": r["applied"], "rounds": r["rounds"]} for r in rows}


def fallback_events(decisions: DataFrame, limit: int = 50) -> list[dict[str, Any]]:
    """The first `limit` times a fallback was applied."""
    rows = (decisions.where(F.col("fallback_applied"))
            .orderBy("ts_ms", "cluster", "observing_broker_id").limit(limit).collect())
    return [{"ts": iso(r["ts_ms"]), "cluster": r["cluster"], "observing_broker_id": r["observing_broker_id"],
             "reason": r["fallback_reason"], "throttle_factor": r["throttle_factor"],
             "missing_brokers": r["missing_brokers"]} for r in rows]


def breaches(config: StorageConfig, observations: DataFrame, decisions: DataFrame) -> list[dict[str, Any]]:
    """First soft and first hard breach per volume, and how deep (per-volume limits); for the legacy
    local source, per broker aggregate (`log_dir` null)."""
    if "soft_breached" in observations.columns:
        rows = (observations.groupBy("cluster", "broker_id", "log_dir").agg(
            F.min(F.when(F.col("soft_breached"), F.col("ts_ms"))).alias("soft_ms"),
            F.min(F.when(F.col("hard_breached"), F.col("ts_ms"))).alias("hard_ms"),
            F.min("available_bytes").alias("min_available"),
            F.min(F.struct("headroom", "total_bytes")).alias("deepest"),
            F.min("volume_factor").alias("lowest_factor"),
            F.max("total_bytes").alias("total_bytes"))
            .where(F.col("soft_ms").isNotNull())
            .orderBy("lowest_factor", "deepest", "cluster", "broker_id", "log_dir").collect())
        return [{
            "cluster": r["cluster"], "broker_id": r["broker_id"], "log_dir": r["log_dir"],
            "first_soft_breach": iso(r["soft_ms"]), "first_hard_breach": iso(r["hard_ms"]),
            "min_available_bytes": r["min_available"], "total_bytes": r["total_bytes"],
            "deepest_past_hard_bytes": max(0.0, -r["deepest"]["headroom"]),
            "lowest_volume_factor": r["lowest_factor"],
        } for r in rows]
    if config.evaluation != "local" or not config.legacy_configured:
        return []
    soft, hard = config.legacy_soft_bytes, config.legacy_hard_bytes
    used = F.col("used_bytes")
    rows = (decisions.where(used.isNotNull()).groupBy("cluster", "observing_broker_id").agg(
        F.min(F.when(used > F.lit(soft).cast("long"), F.col("ts_ms"))).alias("soft_ms"),
        F.min(F.when(used >= F.lit(hard).cast("long"), F.col("ts_ms"))).alias("hard_ms"),
        F.max("used_bytes").alias("max_used"), F.min("throttle_factor").alias("lowest_factor"))
        .where(F.col("soft_ms").isNotNull() | F.col("hard_ms").isNotNull())
        .orderBy("lowest_factor", "cluster", "observing_broker_id").collect())
    return [{
        "cluster": r["cluster"], "broker_id": r["observing_broker_id"], "log_dir": None,
        "first_soft_breach": iso(r["soft_ms"]), "first_hard_breach": iso(r["hard_ms"]),
        "max_used_bytes": r["max_used"],
        "deepest_past_hard_bytes": max(0, r["max_used"] - hard) if hard != LONG_MAX else 0,
        "lowest_volume_factor": r["lowest_factor"],
    } for r in rows]


def metric_states(config: StorageConfig, decisions: DataFrame, label: str) -> list[StorageMetricState]:
    """The end-of-history metric state of every unit (spec: Metrics)."""
    w = Window.partitionBy(*UNIT).orderBy(F.col("ts_ms").desc(), F.col("poll_id").desc_nulls_last(),
                                          F.col("round_window").desc_nulls_last())
    last = decisions.select("*", F.row_number().over(w).alias("n")).where("n = 1").drop("n")
    ok = decisions.where(F.col("collection_error").isNull())
    last_ok = (ok.select(*UNIT, "active_brokers", "active_log_dirs", F.row_number().over(w).alias("n"))
               .where("n = 1").drop("n"))
    counts = (decisions.where(F.col("fallback_applied")).groupBy(*UNIT, "fallback_reason")
              .agg(F.count(F.lit(1)).alias("n")).collect())
    by_unit: dict[tuple[Any, Any], dict[str, int]] = {}
    for c in counts:
        by_unit.setdefault((c["cluster"], c["observing_broker_id"]), {})[c["fallback_reason"]] = c["n"]
    healthy = {(r["cluster"], r["observing_broker_id"]): r for r in last_ok.collect()}
    local = config.evaluation == "local"
    states = []
    for r in last.orderBy(*UNIT).collect():
        key = (r["cluster"], r["observing_broker_id"])
        good = healthy.get(key)
        states.append(StorageMetricState(
            config=label, cluster=r["cluster"] or "", source=r["source"],
            observing_broker_id=r["observing_broker_id"], throttle_factor=r["throttle_factor"],
            throttling_broker_id=r["throttling_broker_id"], throttling_log_dir=r["throttling_log_dir"],
            fallbacks=by_unit.get(key, {}),
            active_brokers=good["active_brokers"] if good else None,
            active_log_dirs=good["active_log_dirs"] if good else None,
            effective_produce_limit=r["effective_produce_limit"],
            used_bytes=r["used_bytes"] if local else None,
            legacy_soft_bytes=config.legacy_soft_bytes if local else None,
            legacy_hard_bytes=config.legacy_hard_bytes if local else None,
        ))
    return states


def time_range(decisions: DataFrame) -> tuple[int, int] | None:
    row = decisions.agg(F.min("ts_ms").alias("a"), F.max("ts_ms").alias("b")).first()
    if row is None or row["a"] is None:
        return None
    return int(row["a"]), int(row["b"])


def _bucket(start: int, end: int) -> tuple[Any, int]:
    width = max(1, -(-(end - start + 1) // PLOT_BUCKETS))
    return ((F.col("ts_ms") - F.lit(start)) / F.lit(width)).cast("long"), width


def factor_series(decisions: DataFrame, span: tuple[int, int]) -> list[dict[str, Any]]:
    """The throttle factor over time, at most `PLOT_BUCKETS` points per cluster: the lowest factor
    of any unit in each time bucket (for the local source, of any broker)."""
    bucket, width = _bucket(*span)
    rows = (decisions.groupBy("cluster", bucket.alias("b")).agg(
        F.min("throttle_factor").alias("factor"), F.max(F.col("fallback_applied").cast("int")).alias("fb"))
        .orderBy("cluster", "b").collect())
    return [{"cluster": r["cluster"], "ts_ms": span[0] + r["b"] * width, "factor": r["factor"],
             "fallback": bool(r["fb"])} for r in rows]


def closest_volumes(observations: DataFrame, count: int) -> list[tuple[str | None, int, str]]:
    """The volumes that came closest to their limits: lowest volume factor, then the least headroom
    in widths of the soft-to-hard ramp (without per-volume limits: the lowest available ratio)."""
    if "volume_factor" in observations.columns:
        ramp = F.greatest(F.col("soft_threshold") - F.col("hard_threshold"), F.lit(1.0))
        order = [F.min("volume_factor"), F.min(F.col("headroom") / ramp)]
    else:
        order = [F.min(F.col("available_bytes") / F.greatest(F.col("total_bytes"), F.lit(1)))]
    ranked = observations.groupBy("cluster", "broker_id", "log_dir").agg(
        *[o.alias(f"k{i}") for i, o in enumerate(order)])
    keys = [f"k{i}" for i in range(len(order))]
    rows = ranked.orderBy(*keys, "cluster", "broker_id", "log_dir").limit(count).collect()
    return [(r["cluster"], r["broker_id"], r["log_dir"]) for r in rows]


def volume_series(observations: DataFrame, volumes: list[tuple[str | None, int, str]],
                  span: tuple[int, int]) -> list[dict[str, Any]]:
    """Available bytes (lowest per time bucket) and the thresholds of the chosen volumes over time,
    in the order of `volumes`."""
    if not volumes:
        return []
    bucket, width = _bucket(*span)
    cond = None
    for cluster, broker, log_dir in volumes:
        one = (F.col("cluster").eqNullSafe(cluster) & (F.col("broker_id") == broker)
               & (F.col("log_dir") == log_dir))
        cond = one if cond is None else cond | one
    thresholds = [F.max(c).alias(c) for c in ("soft_threshold", "hard_threshold")
                  if c in observations.columns]
    rows = (observations.where(cond).groupBy("cluster", "broker_id", "log_dir", bucket.alias("b"))
            .agg(F.min("available_bytes").alias("available"), F.max("total_bytes").alias("total"),
                 *thresholds)
            .orderBy("cluster", "broker_id", "log_dir", "b").collect())
    rank = {v: i for i, v in enumerate(volumes)}
    points = [{"cluster": r["cluster"], "broker_id": r["broker_id"], "log_dir": r["log_dir"],
               "ts_ms": span[0] + r["b"] * width, "available": r["available"], "total": r["total"],
               "soft": r["soft_threshold"] if thresholds else None,
               "hard": r["hard_threshold"] if thresholds else None} for r in rows]
    return sorted(points, key=lambda p: (rank[(p["cluster"], p["broker_id"], p["log_dir"])], p["ts_ms"]))


def summarise(label: str, config: StorageConfig, decisions: DataFrame,
              observations: DataFrame | None) -> EvaluationSummary:
    span = time_range(decisions)
    return EvaluationSummary(
        label=label, config=config, units=throttled_time(decisions), fallbacks=fallbacks(decisions),
        fallback_events=fallback_events(decisions),
        breaches=breaches(config, observations, decisions) if observations is not None else [],
        factor_series=factor_series(decisions, span) if span else [], span=span)
