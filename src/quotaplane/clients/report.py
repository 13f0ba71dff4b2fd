"""Report sections for Kafka client quotas.

Clients by utilisation (furthest over and nearest to their quota), throttle time over time for
the most throttled sharing groups, and how the storage throttle factor changed produce limits.
The inputs are plain rows (dicts) the pipeline collected: standing rows, interval rows of a few
sharing groups, and the storage decisions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from quotaplane.clients.engine.quota_types import CONTROLLER_MUTATION, REQUEST
from quotaplane.core.ordering import nulls_first
from quotaplane.core.report import (
    TIME_SERIES_MARGINS,
    Num,
    Section,
    legend_beside,
    place_grid,
    plain_numbers,
    rate_text,
    time_axis_style,
)

TOP = 10


def _key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    return (row["broker_id"], row["quota_type"], row["user"], row["client_id"])


def _label(row: Mapping[str, Any]) -> str:
    user = row["user"] or "—"
    client = row["client_id"] or "—"
    return f"b{row['broker_id']} {row['quota_type']} {user}/{client}"


def _time(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def quota_text(quota_type: str, value: float | None) -> str:
    """A rate or quota in its quota type's unit: bytes/s (produce, fetch), % of one request
    thread (request), partition mutations/s (controller mutation); `unlimited` for None."""
    if value is None:
        return "unlimited"
    if quota_type == REQUEST:
        return f"{value:,.1f} %"
    if quota_type == CONTROLLER_MUTATION:
        return f"{value:,.2f} mutations/s"
    return rate_text(value)


def _seconds(ms: float) -> str:
    return f"{ms / 1000:,.1f} s"


def utilisation_section(standing: Sequence[Mapping[str, Any]], summary: Mapping[str, Any]) -> Section:
    """`standing`: standing rows including at least the top ones of each table (not necessarily all
    sharing groups); the counts come from `summary`."""
    section = Section("Kafka client quotas")
    section.kpis([
        ("requests evaluated", summary.get("requests", 0)),
        ("recorded", summary.get("recorded_requests", 0)),
        ("throttled", summary.get("throttled_requests", 0)),
        ("throttle time", _seconds(summary.get("throttle_time_total_ms", 0))),
        ("sharing groups", summary.get("sharing_groups", len(standing))),
        ("over quota", summary.get("over_quota_groups",
                                   sum(1 for r in standing if r["standing"] == "over"))),
    ])
    section.text(
        "Each broker measures its own traffic. Requests whose metric tags are equal share one quota "
        "(a sharing group: user and client-id as Kafka tags them, empty when a tag is not used). "
        "Utilisation is the sampled rate over the effective quota x 100; a group is over its quota "
        "when its highest utilisation is above 100 %, near it from 80 % on. Rates and quotas are in "
        "the unit of their type: bytes/s (produce, fetch), % of one request thread (request), "
        "partition mutations/s (controller mutation).")
    header = ["broker", "type", "user", "client-id", "lowest quota", "highest rate", "highest utilisation",
              "requests", "throttled", "throttle time"]

    def rows(selected: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
        return [[r["broker_id"], r["quota_type"], r["user"] or "—", r["client_id"] or "—",
                 Num(quota_text(r["quota_type"], r["quota_limit_min"])),
                 Num(quota_text(r["quota_type"], r["rate_max"])), Num(f"{r['utilisation_max_pct']:,.1f} %"),
                 r["requests"], r["throttled_requests"], Num(_seconds(r["throttle_time_total_ms"]))]
                for r in selected]

    limited = [r for r in standing if r["utilisation_max_pct"] is not None]
    over = sorted((r for r in limited if r["standing"] == "over"),
                  key=lambda r: (-r["utilisation_max_pct"], _key(r)))
    under = sorted((r for r in limited if r["standing"] != "over"),
                   key=lambda r: (-r["utilisation_max_pct"], _key(r)))
    section.heading("Furthest over their quota")
    section.table(header, rows(over[:TOP]), empty="No sharing group went over its quota.")
    section.heading("Nearest to their quota")
    section.table(header, rows(under[:TOP]), empty="No sharing group with a quota stayed under it.")
    return section


def throttle_section(standing: Sequence[Mapping[str, Any]],
                     intervals: Sequence[Mapping[str, Any]]) -> Section | None:
    """Throttle time per interval of the most throttled groups (`intervals` holds their rows)."""
    top = sorted((r for r in standing if r["throttle_time_total_ms"] > 0),
                 key=lambda r: (-r["throttle_time_total_ms"], _key(r)))[:5]
    if not top:
        return None
    section = Section("Client throttling over time")
    fig = Figure(figsize=(9, 3.6))
    ax = fig.add_subplot(1, 1, 1)
    for group in top:
        series = sorted((r for r in intervals if _key(r) == _key(group)),
                        key=lambda r: r["interval_start_ms"])
        ax.step([_time(r["interval_start_ms"]) for r in series],
                [r["throttle_time_total_ms"] / 1000 for r in series], where="post", label=_label(group))
    ax.set_ylabel("throttle time per interval (s)")
    ax.grid(alpha=0.3)
    plain_numbers(ax)
    time_axis_style(ax)
    legend = legend_beside(ax, fontsize=7)
    place_grid(fig, **{**TIME_SERIES_MARGINS, "top": 0.15, "right": 0.15 + legend})  # no title
    section.figure(fig, "Throttle time summed per interval for the five most throttled sharing groups.")
    section.table(["group", "throttled requests", "throttle time", "highest utilisation"],
                  [[_label(g), g["throttled_requests"], Num(_seconds(g["throttle_time_total_ms"])),
                    Num(f"{g['utilisation_max_pct']:,.1f} %") if g["utilisation_max_pct"] is not None
                    else "unlimited"] for g in top])
    return section


def storage_section(decisions: Sequence[Mapping[str, Any]], produce_intervals: Sequence[Mapping[str, Any]],
                    impact: Sequence[Mapping[str, Any]], static_produce: float | None) -> Section:
    """How the storage throttle factor changed produce limits.

    `decisions`: storage decisions (ts_ms, throttle_factor, observing_broker_id); `produce_intervals`:
    interval rows of a few produce groups; `impact`: per produce group its configured base, lowest
    effective limit, intervals under a factor below 1 and requests throttled then.
    """
    section = Section("Storage throttle factor and client produce limits")
    static = "unlimited" if static_produce is None else rate_text(static_produce)
    section.text(
        "With the storage quota callback, a produce quota is the client's quota (or, without one, the "
        f"static produce quota: {static}) times the storage throttle factor in force, never below "
        "1 byte/s. Fetch, request and controller mutation quotas are not affected.")
    fig = Figure(figsize=(9, 4.8))
    ax_factor = fig.add_subplot(2, 1, 1)
    starts = [r["interval_start_ms"] for r in produce_intervals]
    span = (min(starts), max(starts) + 60_000) if starts else None
    by_broker: dict[Any, list[Mapping[str, Any]]] = {}
    for d in decisions:
        by_broker.setdefault(d.get("observing_broker_id"), []).append(d)
    for broker, rows in sorted(by_broker.items(), key=lambda kv: nulls_first(kv[0])):
        rows = _within(sorted(rows, key=lambda r: r["ts_ms"]), span)
        ax_factor.step([_time(r["ts_ms"]) for r in rows], [r["throttle_factor"] for r in rows], where="post",
                       label="cluster" if broker is None else f"broker {broker}")
    ax_factor.set_ylabel("throttle factor")
    ax_factor.set_ylim(-0.05, 1.05)
    ax_factor.grid(alpha=0.3)
    legend = legend_beside(ax_factor, fontsize=7)
    ax_limit = fig.add_subplot(2, 1, 2, sharex=ax_factor)
    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for r in produce_intervals:
        groups.setdefault(_key(r), []).append(r)
    for rows in groups.values():
        rows = sorted(rows, key=lambda r: r["interval_start_ms"])
        ax_limit.step([_time(r["interval_start_ms"]) for r in rows],
                      [r["quota_limit_min"] for r in rows], where="post", label=_label(rows[0]))
    ax_limit.set_ylabel("lowest produce limit")
    ax_limit.set_yscale("log")  # a limit falls to 1 byte/s at factor 0
    ax_limit.grid(alpha=0.3)
    for axis_format in (ax_limit.yaxis.set_major_formatter, ax_limit.yaxis.set_minor_formatter):
        axis_format(FuncFormatter(lambda value, _: rate_text(value)))
    ax_limit.tick_params(axis="y", which="both", labelsize=7)
    legend = max(legend, legend_beside(ax_limit, fontsize=7))
    if span is not None:
        ax_factor.set_xlim(_time(span[0]), _time(span[1]))
    time_axis_style(ax_limit)
    ax_factor.tick_params(labelbottom=False)
    # dates below the lower only
    place_grid(fig, 2, 1, **{**TIME_SERIES_MARGINS, "top": 0.15, "right": 0.15 + legend}, gap_h=0.2)
    section.figure(fig, "Top: the storage throttle factor in force while clients sent requests. Bottom: the "
                        "lowest effective produce limit per interval of the busiest produce groups.")
    section.table(["group", "base quota", "lowest limit", "intervals with factor < 1",
                   "throttled while factor < 1"],
                  [[_label(r), Num(rate_text(r["base"])) if r["base"] is not None else "unlimited",
                    Num(rate_text(r["quota_limit_min"])), r["factor_intervals"],
                    r["throttled_under_factor"]] for r in impact],
                  empty="No produce group saw a throttle factor below 1.")
    return section


def _within(rows: list[Mapping[str, Any]], span: tuple[int, int] | None) -> list[Mapping[str, Any]]:
    """Decisions inside `span`, plus the one in force at its start (drawn from the start)."""
    if span is None:
        return rows
    before = [r for r in rows if r["ts_ms"] <= span[0]]
    inside = [r for r in rows if span[0] < r["ts_ms"] <= span[1]]
    head = [{**before[-1], "ts_ms": span[0]}] if before else []
    return [*head, *inside]


@dataclass
class ClientsReportData:
    """Small results for the report: the standing rows picked for it, the stage summary, the
    intervals of the most throttled groups, and the storage section's data (`decisions`,
    `produce_intervals`, `impact`, `static_produce`) when the storage callback is installed."""

    standing: Sequence[Mapping[str, Any]]
    summary: Mapping[str, Any]
    throttled_intervals: Sequence[Mapping[str, Any]]
    storage: Mapping[str, Any] | None


def build_sections(data: ClientsReportData) -> list[Section]:
    standing, storage = data.standing, data.storage
    sections = [utilisation_section(standing, data.summary)]
    throttle = throttle_section(standing, data.throttled_intervals)
    if throttle is not None:
        sections.append(throttle)
    if storage is not None:
        sections.append(storage_section(storage["decisions"], storage["produce_intervals"],
                                        storage["impact"], storage["static_produce"]))
    return sections
