"""The summary's, metrics' and report's data, from the rows the stage collected once: one per
sharing group (`standing_rows(extra=True)`), and the interval rows of a few groups. Plain Python,
no Spark: the groups come sorted by `KEY`, so a stable sort breaks ties as Spark's `orderBy(...,
*KEY)` would.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from quotaplane.clients import report as client_report
from quotaplane.clients.engine.entities import ClientQuotaConfig
from quotaplane.clients.engine.quota_types import PRODUCE, QUOTA_TYPES
from quotaplane.clients.engine.resolution import QuotaResolver, Tags
from quotaplane.clients.engine.settings import ClientQuotaSettings
from quotaplane.clients.spark.intervals import KEY, LAST_FIELDS, STANDING_COLUMNS


def group_key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(row[k] for k in KEY)


def _standing_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A standing row as the table has it (`config_id` last, as read back)."""
    return {**{k: row[k] for k in STANDING_COLUMNS if k != "config_id"}, "config_id": row["config_id"]}


def report_standing(groups: list[dict[str, Any]], top: int = client_report.TOP) -> list[dict[str, Any]]:
    """The standing rows the report and console use: the groups furthest over and nearest to their
    quota, the most throttled, and the busiest produce groups (not every sharing group). `groups`
    are sorted by `KEY`, so a stable sort breaks ties by it."""
    def first(rows: list[dict[str, Any]], by: str, count: int) -> list[dict[str, Any]]:
        return sorted(rows, key=lambda r: -r[by])[:count]

    picks = [
        first([g for g in groups if g["standing"] == "over"], "utilisation_max_pct", top),
        first([g for g in groups if g["standing"] in ("near", "under")], "utilisation_max_pct", top),
        first([g for g in groups if g["throttle_time_total_ms"] > 0], "throttle_time_total_ms", 5),
        first([g for g in groups if g["quota_type"] == PRODUCE and g["quota_limit_min"] is not None],
              "rate_max", 5),
    ]
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    for pick in picks:
        for r in pick:
            rows[group_key(r)] = _standing_row(r)
    return list(rows.values())


def metric_rows(groups: list[dict[str, Any]], quota_value_metric: bool) -> list[dict[str, Any]]:
    """Per sharing group: its last interval's gauges and its totals."""
    fields = [*LAST_FIELDS, *(["quota_value"] if quota_value_metric else [])]
    return [{**{k: g[k] for k in KEY}, **{name: g[f"last_{name}"] for name in fields},
             "requests": g["requests"], "throttled_requests": g["throttled_requests"],
             "throttle_time_total_ms": g["throttle_time_total_ms"]} for g in groups]


def totals(groups: list[dict[str, Any]], unrecorded: Mapping[str, int]) -> dict[str, Any]:
    """The summary's counts, from the sharing groups (recorded requests) and the unrecorded ones."""
    by_type: dict[str, dict[str, Any]] = {}
    factor_min: dict[str, float] = {}
    for quota_type in QUOTA_TYPES:
        members = [g for g in groups if g["quota_type"] == quota_type]
        if not members and not unrecorded.get(quota_type):
            continue
        recorded = sum(g["requests"] for g in members)
        by_type[quota_type] = {
            "requests": recorded + unrecorded.get(quota_type, 0), "recorded": recorded,
            "violated": sum(g["violated_requests"] for g in members),
            "throttled": sum(g["throttled_requests"] for g in members),
            "throttle_time_total_ms": int(sum(g["throttle_time_total_ms"] for g in members))}
        factors = [g["factor_min"] for g in members if g["factor_min"] is not None]
        if factors:
            factor_min[quota_type] = min(factors)
    return {
        "requests": sum(v["requests"] for v in by_type.values()),
        "recorded_requests": sum(v["recorded"] for v in by_type.values()),
        "violated_requests": sum(v["violated"] for v in by_type.values()),
        "throttled_requests": sum(v["throttled"] for v in by_type.values()),
        "throttle_time_total_ms": sum(v["throttle_time_total_ms"] for v in by_type.values()),
        "throttle_factor_min": min(factor_min.values()) if factor_min else None,
        "by_quota_type": by_type,
    }


def most_throttled(standing: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted((r for r in standing if r["throttle_time_total_ms"] > 0),
                  key=lambda r: -r["throttle_time_total_ms"])[:5]


def busiest_produce(standing: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted((r for r in standing if r["quota_type"] == PRODUCE and r["quota_limit_min"] is not None),
                  key=lambda r: -r["rate_max"])[:5]


def of_groups(rows: list[dict[str, Any]], groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    keys = {group_key(g) for g in groups}
    return [r for r in rows if group_key(r) in keys]


def storage_report(groups: list[dict[str, Any]], produce_intervals: list[dict[str, Any]],
                    decision_rows: list[dict[str, Any]], settings: ClientQuotaSettings,
                    config: ClientQuotaConfig) -> dict[str, Any]:
    """The storage section's data: decisions, the busiest produce groups' intervals, and the produce
    groups whose limit a factor below 1 lowered most often (base: their quota before the factor)."""
    impact = sorted((g for g in groups if g["quota_type"] == PRODUCE and g["factor_intervals"] > 0),
                    key=lambda g: (-g["throttled_under_factor"], -g["factor_intervals"]))[:15]
    resolver = QuotaResolver(config)
    rows = []
    for g in impact:
        configured = resolver.limit(PRODUCE, Tags(g["user"], g["client_id"])).limit
        rows.append({**{k: g[k] for k in KEY}, "quota_limit_min": g["quota_limit_min"],
                     "factor_intervals": g["factor_intervals"],
                     "throttled_under_factor": g["throttled_under_factor"],
                     "base": settings.static_produce if configured is None else configured})
    return {"decisions": decision_rows, "produce_intervals": produce_intervals,
            "impact": rows, "static_produce": settings.static_produce}
