"""What a storage evaluation amounts to: small results computed in Spark from the decisions and the
counted volume observations, for `summary.json`, the metrics and the report.

A *unit* is what decides on its own: a cluster (cluster source, strimzi dialect) or a broker of a
cluster (local source, `observing_broker_id`).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from quotaplane.core.buckets import bucket_width
from quotaplane.core.javamath import LONG_MAX
from quotaplane.core.ordering import nulls_first
from quotaplane.core.spark.side_by_side import side_by_side
from quotaplane.storage.config import StorageConfig
from quotaplane.storage.metrics import StorageMetricState
from quotaplane.storage.summary import FALLBACK_EVENTS, PERIODS, EvaluationSummary, iso

UNIT = ["cluster", "observing_broker_id"]
PLOT_BUCKETS = 600
EVENT_ORDER = ("ts_ms", "cluster", "observing_broker_id", "poll_id", "round_window")
EVENT_FIELDS = (*EVENT_ORDER, "fallback_reason", "throttle_factor", "missing_brokers")


def _unit_window() -> Window:
    return Window.partitionBy(*UNIT).orderBy("ts_ms", "poll_id", "round_window")


def decision_groups(decisions: DataFrame, span: tuple[int, int] | None, buckets: int = PLOT_BUCKETS,
                    events: int = FALLBACK_EVENTS
                    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]],
                               list[dict[str, Any]]]:
    """Per unit, per unit and fallback reason, the throttle factor over time and the first `events`
    times a fallback was applied, from one job: Spark aggregates per (unit, reason, plot bucket)
    (each group keeps its own first `events`) and the groups are folded here.

    A unit's row: its decisions, first and last time, the time with factor < 1 and with factor == 0
    (each round lasts until the unit's next round; the last round has no duration), first throttled
    and first blocked time, the lowest factor, its last decision (`last`) and the active brokers and
    log dirs of its last round without a collection error (`last_ok`). A reason's row: the times its
    fallback was applied and the rounds it decided. The series: per cluster and time bucket of
    `span` (at most `buckets`), the lowest factor of any unit (for the local source, of any
    broker) and whether a fallback was applied; `span` is the decisions' first and last time (None
    without decisions). An event is a decision with a fallback applied (`_event`), and the events
    are in round order: time, cluster, broker, poll id, window (nulls first)."""
    nxt = F.lead("ts_ms").over(_unit_window())
    order = F.struct("ts_ms", "poll_id", "round_window")  # nulls order first: a max is the window's last
    d = decisions.select("*", (nxt - F.col("ts_ms")).alias("span"), order.alias("_order"))
    throttled, blocked = F.col("throttle_factor") < 1.0, F.col("throttle_factor") == 0.0
    last = F.struct("source", "throttle_factor", "throttling_broker_id", "throttling_log_dir",
                    "effective_produce_limit", "used_bytes")
    ok_order = F.when(F.col("collection_error").isNull(), F.col("_order"))
    bucket, width = _bucket(*span, buckets) if span is not None else (F.lit(0).cast("long"), 1)
    groups = d.groupBy(*UNIT, "fallback_reason", bucket.alias("b")).agg(
        F.count(F.lit(1)).alias("decisions"),
        F.count(F.when(F.col("fallback_applied"), 1)).alias("applied"),
        F.min("ts_ms").alias("first_ms"), F.max("ts_ms").alias("last_ms"),
        F.coalesce(F.sum(F.when(throttled, F.col("span"))), F.lit(0)).alias("throttled_ms"),
        F.coalesce(F.sum(F.when(blocked, F.col("span"))), F.lit(0)).alias("blocked_ms"),
        F.min(F.when(throttled, F.col("ts_ms"))).alias("first_throttled_ms"),
        F.min(F.when(blocked, F.col("ts_ms"))).alias("first_blocked_ms"),
        F.min("throttle_factor").alias("lowest_factor"),
        F.max("_order").alias("last_order"), F.max_by(last, "_order").alias("last"),
        F.max(ok_order).alias("ok_order"),
        F.max_by(F.struct("active_brokers", "active_log_dirs"), ok_order).alias("last_ok"),
        # `min_by` leaves out the rows whose order is null: those without a fallback applied
        F.min_by(F.struct(*EVENT_FIELDS), F.when(F.col("fallback_applied"), F.struct(*EVENT_ORDER)),
                 events).alias("events"),
    ).toArrow().to_pylist()  # Arrow: a unit has up to `buckets` groups per reason
    units: dict[tuple[Any, Any], dict[str, Any]] = {}
    counts: dict[tuple[Any, Any, str], dict[str, Any]] = {}
    points: dict[tuple[Any, int], dict[str, Any]] = {}
    first_events: list[dict[str, Any]] = []  # each group's own first ones
    start = span[0] if span is not None else 0
    for g in groups:
        first_events += g.pop("events") or []
        for name in ("last_order", "ok_order"):  # Arrow's structs are dicts: tuples, in field order
            g[name] = tuple(g[name].values()) if g[name] is not None else None
        reason, applied_count, b = g.pop("fallback_reason"), g.pop("applied"), g.pop("b")
        unit = (g["cluster"], g["observing_broker_id"])
        if reason is not None:
            count = counts.setdefault((*unit, reason), {
                "cluster": unit[0], "observing_broker_id": unit[1], "fallback_reason": reason,
                "applied": 0, "rounds": 0})
            count["applied"] += applied_count
            count["rounds"] += g["decisions"]
        point = points.setdefault((unit[0], b), {"cluster": unit[0], "ts_ms": start + b * width,
                                                 "factor": g["lowest_factor"], "fallback": False})
        point["factor"] = min(point["factor"], g["lowest_factor"])  # a decision's factor is never null
        point["fallback"] = point["fallback"] or applied_count > 0
        if unit in units:
            _fold(units[unit], g)
        else:
            units[unit] = g
    # ordered here: an `orderBy` before `collect` costs Spark a sampling job of its own
    return (sorted(units.values(), key=lambda r: nulls_first(r["cluster"], r["observing_broker_id"])),
            sorted(counts.values(), key=lambda r: nulls_first(r["cluster"], r["observing_broker_id"],
                                                              r["fallback_reason"])),
            sorted(points.values(), key=lambda p: nulls_first(p["cluster"], p["ts_ms"])),
            [_event(e) for e in sorted(first_events, key=_event_order)[:events]])


def throttled_periods(decisions: DataFrame, limit: int = PERIODS) -> list[dict[str, Any]]:
    """Per unit, its throttled periods: runs of consecutive rounds with a factor below 1 and one
    cause, the fallback reason in force (`fallback_reason`) or, without one, the throttling volume
    (a change of either starts a new period). A period lasts from its first round until the unit's
    next round after its last (`end_ms`; None when the unit is still throttled at its last round),
    with its rounds and lowest factor. The first `limit` periods of each unit, each with the unit's
    count of periods (`of`), in unit then time order."""
    w = _unit_window()
    throttled = F.col("throttle_factor") < 1.0
    volume = F.col("fallback_reason").isNull()
    cause = F.struct(F.col("fallback_reason").alias("reason"),
                     F.when(volume, F.col("throttling_broker_id")).alias("broker_id"),
                     F.when(volume, F.col("throttling_log_dir")).alias("log_dir"))
    d = decisions.select(*UNIT, "ts_ms", "poll_id", "round_window", "throttle_factor",
                         throttled.alias("throttled"),
                         cause.alias("cause"), F.lead("ts_ms").over(w).alias("next_ms"))
    continues = F.lag("throttled").over(w) & F.lag("cause").over(w).eqNullSafe(F.col("cause"))
    starts = (F.col("throttled") & ~F.coalesce(continues, F.lit(False))).cast("int")
    numbered = d.select("*", F.sum(starts).over(w.rowsBetween(Window.unboundedPreceding, 0)).alias("period"))
    periods = numbered.where("throttled").groupBy(*UNIT, "period").agg(
        F.min("ts_ms").alias("start_ms"), F.max_by("next_ms", "ts_ms").alias("end_ms"),
        F.count(F.lit(1)).alias("rounds"), F.min("throttle_factor").alias("lowest_factor"),
        F.first("cause").alias("cause"))
    by_unit = Window.partitionBy(*UNIT)
    ranked = periods.select("*", F.row_number().over(by_unit.orderBy("start_ms")).alias("n"),
                            F.count(F.lit(1)).over(by_unit).alias("of"))
    rows = ranked.where(F.col("n") <= limit).drop("period", "n").toArrow().to_pylist()
    for r in rows:
        r.update(r.pop("cause"))
    return sorted(rows, key=lambda r: nulls_first(r["cluster"], r["observing_broker_id"], r["start_ms"]))


def _event_order(e: dict[str, Any]) -> tuple[Any, ...]:
    """An event's round order, as Spark orders `EVENT_ORDER` ascending (nulls first)."""
    return nulls_first(*(e[k] for k in EVENT_ORDER))


def _later(a: tuple[Any, ...] | None, b: tuple[Any, ...] | None) -> bool:
    """Whether round order `b` comes after `a` in Spark's ascending order (nulls first)."""
    return b is not None and (a is None or nulls_first(*b) > nulls_first(*a))


def _fold(unit: dict[str, Any], g: dict[str, Any]) -> dict[str, Any]:
    """A unit's row with one more of its groups folded in."""
    for name in ("decisions", "throttled_ms", "blocked_ms"):
        unit[name] += g[name]
    for name in ("first_ms", "first_throttled_ms", "first_blocked_ms", "lowest_factor"):
        if g[name] is not None and (unit[name] is None or g[name] < unit[name]):
            unit[name] = g[name]
    unit["last_ms"] = max(unit["last_ms"], g["last_ms"])
    if _later(unit["last_order"], g["last_order"]):
        unit["last_order"], unit["last"] = g["last_order"], g["last"]
    if _later(unit["ok_order"], g["ok_order"]):
        unit["ok_order"], unit["last_ok"] = g["ok_order"], g["last_ok"]
    return unit


def throttled_time(units: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The units of `summary.json` from `decision_groups`."""
    return [{
        "cluster": r["cluster"], "observing_broker_id": r["observing_broker_id"], "decisions": r["decisions"],
        "from": iso(r["first_ms"]), "to": iso(r["last_ms"]),
        "time_throttled_seconds": r["throttled_ms"] / 1000, "time_blocked_seconds": r["blocked_ms"] / 1000,
        "first_throttled": iso(r["first_throttled_ms"]), "first_blocked": iso(r["first_blocked_ms"]),
        "lowest_factor": r["lowest_factor"], "last_factor": r["last"]["throttle_factor"],
    } for r in units]


def fallbacks(counts: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """By reason: times the fallback was applied (the counter) and rounds decided by the fallback."""
    out: dict[str, dict[str, int]] = {}
    for r in counts:
        entry = out.setdefault(r["fallback_reason"], {"applied": 0, "rounds": 0})
        entry["applied"] += r["applied"]
        entry["rounds"] += r["rounds"]
    return dict(sorted(out.items()))


def _event(e: dict[str, Any]) -> dict[str, Any]:
    """A fallback event of `summary.json` from its decision's `EVENT_FIELDS`."""
    return {"ts": iso(e["ts_ms"]), "cluster": e["cluster"], "observing_broker_id": e["observing_broker_id"],
            "reason": e["fallback_reason"], "throttle_factor": e["throttle_factor"],
            "missing_brokers": e["missing_brokers"]}


def breaches(config: StorageConfig, profile: list[dict[str, Any]] | None,
             decisions: DataFrame) -> list[dict[str, Any]]:
    """First soft and first hard breach per volume, and how deep (per-volume limits, from the
    `volume_profile`), ordered by lowest factor, then least headroom; for the legacy local source,
    per broker aggregate (`log_dir` null)."""
    if profile and "soft_ms" in profile[0]:
        found = [v for v in _per_volume(profile) if v["soft_ms"] is not None]
        found.sort(key=lambda v: (v["lowest_factor"], v["headroom"], *_volume_order(v)))
        return [{
            "cluster": v["cluster"], "broker_id": v["broker_id"], "log_dir": v["log_dir"],
            "first_soft_breach": iso(v["soft_ms"]), "first_hard_breach": iso(v["hard_ms"]),
            "min_available_bytes": v["available"], "total_bytes": v["total"],
            "deepest_past_hard_bytes": max(0.0, -v["headroom"]),
            "lowest_volume_factor": v["lowest_factor"],
        } for v in found]
    if config.evaluation != "local" or not config.legacy_configured:
        return []
    soft, hard = config.legacy_soft_bytes, config.legacy_hard_bytes
    used = F.col("used_bytes")
    rows = (decisions.where(used.isNotNull()).groupBy("cluster", "observing_broker_id").agg(
        F.min(F.when(used > F.lit(soft).cast("long"), F.col("ts_ms"))).alias("soft_ms"),
        F.min(F.when(used >= F.lit(hard).cast("long"), F.col("ts_ms"))).alias("hard_ms"),
        F.max("used_bytes").alias("max_used"), F.min("throttle_factor").alias("lowest_factor"))
        .where(F.col("soft_ms").isNotNull() | F.col("hard_ms").isNotNull()).collect())
    rows = sorted(rows, key=lambda r: (r["lowest_factor"],
                                       *nulls_first(r["cluster"], r["observing_broker_id"])))
    return [{
        "cluster": r["cluster"], "broker_id": r["observing_broker_id"], "log_dir": None,
        "first_soft_breach": iso(r["soft_ms"]), "first_hard_breach": iso(r["hard_ms"]),
        "max_used_bytes": r["max_used"],
        "deepest_past_hard_bytes": max(0, r["max_used"] - hard) if hard != LONG_MAX else 0,
        "lowest_volume_factor": r["lowest_factor"],
    } for r in rows]


def metric_states(config: StorageConfig, units: list[dict[str, Any]], counts: list[dict[str, Any]],
                  label: str) -> list[StorageMetricState]:
    """The end-of-history metric state of every unit (spec: Metrics), from `decision_groups`."""
    by_unit: dict[tuple[Any, Any], dict[str, int]] = {}
    for c in counts:
        if c["applied"]:
            unit = by_unit.setdefault((c["cluster"], c["observing_broker_id"]), {})
            unit[c["fallback_reason"]] = c["applied"]
    local = config.evaluation == "local"
    states = []
    for u in units:
        r, good = u["last"], u["last_ok"]
        states.append(StorageMetricState(
            config=label, cluster=u["cluster"] or "", source=r["source"],
            observing_broker_id=u["observing_broker_id"], throttle_factor=r["throttle_factor"],
            throttling_broker_id=r["throttling_broker_id"], throttling_log_dir=r["throttling_log_dir"],
            fallbacks=dict(sorted(by_unit.get((u["cluster"], u["observing_broker_id"]), {}).items())),
            active_brokers=good["active_brokers"] if good else None,
            active_log_dirs=good["active_log_dirs"] if good else None,
            effective_produce_limit=r["effective_produce_limit"],
            used_bytes=r["used_bytes"] if local else None,
            legacy_soft_bytes=config.legacy_soft_bytes if local else None,
            legacy_hard_bytes=config.legacy_hard_bytes if local else None,
        ))
    return states


def _bucket(start: int, end: int, buckets: int = PLOT_BUCKETS) -> tuple[Any, int]:
    width = bucket_width(start, end, buckets)
    return ((F.col("ts_ms") - F.lit(start)) / F.lit(width)).cast("long"), width


def volume_profile(observations: DataFrame, span: tuple[int, int]) -> list[dict[str, Any]]:
    """Per counted volume and plot bucket (at most `PLOT_BUCKETS` per volume), in one job of hash
    aggregates: lowest available and highest total bytes, how close the volume came (`closeness`:
    the lowest volume factor, then the least headroom in widths of the soft-to-hard ramp; without
    per-volume limits the lowest available ratio) and, with per-volume limits, the first soft and hard
    breach, the least headroom, the lowest factor and the thresholds. Every per-volume summary and
    plot is computed from it."""
    bucket, width = _bucket(*span)
    aggs = [F.min("available_bytes").alias("available"), F.max("total_bytes").alias("total")]
    if "volume_factor" in observations.columns:
        ramp = F.greatest(F.col("soft_threshold") - F.col("hard_threshold"), F.lit(1.0))
        aggs += [F.min("volume_factor").alias("lowest_factor"), F.min(F.col("headroom") / ramp).alias("k1"),
                 F.min(F.when(F.col("soft_breached"), F.col("ts_ms"))).alias("soft_ms"),
                 F.min(F.when(F.col("hard_breached"), F.col("ts_ms"))).alias("hard_ms"),
                 F.min("headroom").alias("headroom"),
                 F.max("soft_threshold").alias("soft"), F.max("hard_threshold").alias("hard")]
    else:
        aggs.append(F.min(F.col("available_bytes") / F.greatest(F.col("total_bytes"), F.lit(1))).alias("k0"))
    table = observations.groupBy("cluster", "broker_id", "log_dir", bucket.alias("b")).agg(*aggs).toArrow()
    rows = table.to_pylist()
    for r in rows:
        r["ts_ms"] = span[0] + r.pop("b") * width
    return rows


def _volume_order(v: dict[str, Any]) -> tuple[Any, ...]:
    """Spark's ascending order of (cluster, broker, log dir): nulls first."""
    return nulls_first(v["cluster"], v["broker_id"], v["log_dir"])


_LOWEST = ("available", "lowest_factor", "k0", "k1", "soft_ms", "hard_ms", "headroom")


def _per_volume(profile: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The profile's buckets folded per volume (lowest of each lowest, highest total)."""
    volumes: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in profile:
        key = (r["cluster"], r["broker_id"], r["log_dir"])
        v = volumes.get(key)
        if v is None:
            volumes[key] = dict(r)
            continue
        for name in _LOWEST:
            if name in r and r[name] is not None and (v[name] is None or r[name] < v[name]):
                v[name] = r[name]
        v["total"] = max(v["total"], r["total"])
    return list(volumes.values())


def closest_volumes(profile: list[dict[str, Any]], count: int) -> list[tuple[str | None, int, str]]:
    """The volumes that came closest to their limits: lowest volume factor, then the least headroom
    in widths of the soft-to-hard ramp (without per-volume limits: the lowest available ratio)."""
    keys = ("lowest_factor", "k1") if profile and "k1" in profile[0] else ("k0",)
    ranked = sorted(_per_volume(profile), key=lambda v: (*[v[k] for k in keys], *_volume_order(v)))
    return [(v["cluster"], v["broker_id"], v["log_dir"]) for v in ranked[:count]]


def volume_series(profile: list[dict[str, Any]], volumes: list[tuple[str | None, int, str]]
                  ) -> list[dict[str, Any]]:
    """Available bytes (lowest per time bucket) and the thresholds of the chosen volumes over time,
    in the order of `volumes`."""
    rank = {v: i for i, v in enumerate(volumes)}
    points = [{"cluster": r["cluster"], "broker_id": r["broker_id"], "log_dir": r["log_dir"],
               "ts_ms": r["ts_ms"], "available": r["available"], "total": r["total"],
               "soft": r.get("soft"), "hard": r.get("hard")}
              for r in profile if (r["cluster"], r["broker_id"], r["log_dir"]) in rank]
    return sorted(points, key=lambda p: (rank[(p["cluster"], p["broker_id"], p["log_dir"])], p["ts_ms"]))


def volume_count(profile: list[dict[str, Any]]) -> int:
    return len({(r["cluster"], r["broker_id"], r["log_dir"]) for r in profile})


def summarise(label: str, config: StorageConfig, decisions: DataFrame, span: tuple[int, int] | None,
              observations: DataFrame | None
              ) -> tuple[EvaluationSummary, list[StorageMetricState], list[dict[str, Any]]]:
    """The summary of one evaluation, its metric states and (with `observations`) its volume
    profile. `span` is the decisions' first and last time (their job observes it; None without
    decisions): it sets the plots' buckets, so the summary's two actions do not wait for one another
    and run side by side: the small one over the decisions (`decision_groups`) and the aggregation
    of the observations."""
    actions = [lambda: decision_groups(decisions, span), lambda: throttled_periods(decisions)]
    if span is not None and observations is not None:
        actions.append(lambda: volume_profile(observations, span))
    results = side_by_side(*actions)
    units, counts, series, events = results[0]
    periods = results[1]
    profile = results[2] if len(results) > 2 else []
    summary = EvaluationSummary(
        label=label, config=config, units=throttled_time(units), fallbacks=fallbacks(counts),
        fallback_events=events,
        breaches=breaches(config, profile, decisions) if observations is not None else [],
        factor_series=series, span=span, periods=periods)
    return summary, metric_states(config, units, counts, label), profile
