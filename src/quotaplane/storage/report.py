"""The storage quota section of the report: the throttled periods with their causes, the throttle
factor over time (both configurations when compared), volumes against their thresholds, fallback
events and the volumes that breached; and the "Now" lines of the units throttled at the end.

Inputs are plain data (`quotaplane.storage.summary`), so this
module only draws and writes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from quotaplane.core.report import (
    TIME_SERIES_MARGINS,
    NowEntry,
    Num,
    Section,
    legend_beside,
    place_grid,
    plain_numbers,
    size_text,
    time_axis_style,
    when_text,
)
from quotaplane.storage.summary import FALLBACK_EVENTS, PERIODS, EvaluationSummary

GIB = 1024**3
COLORS = ["#1f6fb2", "#d1495b", "#2e933c", "#edae49", "#7b4fa0", "#00798c", "#8c564b", "#555555"]


def _dt(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC).replace(tzinfo=None)


def duration(seconds: float) -> str:
    """`3d 4h`, `2h 5m`, `42m`, `17s`."""
    s = round(seconds)
    days, rem = divmod(s, 86400)
    hours, rem = divmod(rem, 3600)
    minutes, secs = divmod(rem, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    if minutes:
        return f"{minutes}m"
    return f"{secs}s"


def _label(s: EvaluationSummary) -> str:
    name = s.config.path.rsplit("/", 1)[-1] if s.config.path else s.label
    if s.config.dialect == "strimzi":
        return f"strimzi dialect ({name})"
    return f"{s.config.evaluation} source ({name})"


def console_lines(s: EvaluationSummary) -> list[str]:
    """A few lines for the final summary print."""
    d = s.as_dict()
    line = f"{_label(s)}: {d['decisions']} decisions; "
    if d["first_throttled"]:
        line += (f"throttled {duration(d['time_throttled_seconds'])} "
                 f"(fully blocked {duration(d['time_blocked_seconds'])})")
        volume = [p for p in s.periods if p["reason"] is None]
        if volume:
            first = volume[0]
            line += f", by a volume from {when_text(first['start_ms'])} ({cause_text(first)})"
        fallback = len(s.periods) - len(volume)
        if fallback:
            line += f"; {fallback} period(s) by the fallback factor"
    else:
        line += "never throttled"
    lines = [line]
    if s.fallbacks:
        applied = ", ".join(f"{reason} x{v['applied']}" for reason, v in s.fallbacks.items())
        lines.append(f"  fallbacks: {applied}")
    hard = [b for b in s.breaches if b["first_hard_breach"]]
    if hard:
        b = min(hard, key=lambda x: x["first_hard_breach"])
        where = f"broker {b['broker_id']}" + (f" {b['log_dir']}" if b["log_dir"] else "")
        lines.append(f"  first hard limit breach: {where} at {b['first_hard_breach']}")
    return lines


REASONS = {"missing_broker_data": "an active broker sent no volumes"}


def reason_text(reason: str) -> str:
    """A fallback reason in words, its name in brackets."""
    return f"{REASONS.get(reason, 'the collection failed')} ({reason})"


def cause_text(period: dict[str, Any]) -> str:
    """Why a throttled period throttled: the fallback factor and its reason, or the throttling
    volume and the limit it was past (hard when the factor reached 0)."""
    if period["reason"] is not None:
        return f"fallback factor: {reason_text(period['reason'])}"
    log_dir = period["log_dir"] or "(all log dirs)"
    where = f"broker {period['broker_id']} {log_dir}"
    limit = "at its hard limit" if period["lowest_factor"] == 0 else "past its soft limit"
    return f"volume {where} {limit}"


def _unit(period: dict[str, Any], source: str) -> str:
    cluster = period["cluster"] or "(no cluster)"
    if period["observing_broker_id"] is None:
        return f"every producer of cluster {cluster}" if source != "local" else cluster
    return f"producers on broker {period['observing_broker_id']} of cluster {cluster}"


def _follows(earlier: dict[str, Any], later: dict[str, Any]) -> bool:
    """Whether `later` starts where `earlier` ends, in the same unit: throttled without a break."""
    same = all(earlier[k] == later[k] for k in ("cluster", "observing_broker_id"))
    return same and earlier["end_ms"] == later["start_ms"]


def now_entries(s: EvaluationSummary) -> list[NowEntry]:
    """The units still throttled at their last round, with the cause of their last period."""
    last = {(u["cluster"], u["observing_broker_id"]): u.get("last_factor") for u in s.units}
    out = []
    for i, p in enumerate(s.periods):
        if p["end_ms"] is None:
            unit = (p["cluster"], p["observing_broker_id"])
            factor = last.get(unit)
            detail = cause_text(p) + (f"; throttle factor {factor:.2f}" if factor is not None else "")
            # throttled without a break since the first of the periods that follow one another
            first = i
            while first > 0 and _follows(s.periods[first - 1], s.periods[first]):
                first -= 1
            since = when_text(s.periods[first]["start_ms"])
            if first != i:
                since += f" (this cause since {when_text(p['start_ms'])})"
            out.append(NowEntry("throttled", _unit(p, s.config.evaluation), detail, since,
                                rank=factor if factor is not None else 0.0))
    return out


def _factor_figure(summaries: Sequence[EvaluationSummary]) -> Figure:
    fig = Figure(figsize=(10, 3.6))
    ax = fig.add_subplot(1, 1, 1)
    for i, s in enumerate(summaries):
        by_cluster: dict[str | None, list[dict[str, Any]]] = defaultdict(list)
        for p in s.factor_series:
            by_cluster[p["cluster"]].append(p)
        for j, (cluster, points) in enumerate(sorted(by_cluster.items(), key=lambda kv: kv[0] or "")):
            name = _label(s) + (f" · {cluster}" if len(by_cluster) > 1 else "")
            color = COLORS[(i * 3 + j) % len(COLORS)]
            ax.step([_dt(p["ts_ms"]) for p in points], [p["factor"] for p in points], where="post",
                    label=name, color=color, linewidth=1.6 if i == 0 else 1.2,
                    linestyle="-" if i == 0 else "--")
            fb = [p for p in points if p["fallback"]]
            if fb:
                ax.scatter([_dt(p["ts_ms"]) for p in fb], [p["factor"] for p in fb], marker="x", color=color,
                           s=28, zorder=3, label=f"fallback applied ({name})")
    ax.set_ylim(-0.05, 1.05)
    ax.set_ylabel("throttle factor")
    ax.grid(alpha=0.3)
    time_axis_style(ax)
    legend = legend_beside(ax, fontsize=7)
    place_grid(fig, **{**TIME_SERIES_MARGINS, "left": 0.7, "top": 0.15, "right": 0.15 + legend})
    return fig


def _volumes_figure(series: list[dict[str, Any]]) -> Figure:
    """Small multiples, in the order of `series` (closest to its limits first), one legend above."""
    groups: dict[tuple[Any, Any, Any], list[dict[str, Any]]] = defaultdict(list)
    for p in series:
        groups[(p["cluster"], p["broker_id"], p["log_dir"])].append(p)
    n = len(groups)
    cols = 2 if n > 1 else 1
    rows = -(-n // cols)
    fig = Figure(figsize=(10, 2.5 * rows + 0.9))
    first = None
    for i, ((cluster, broker, log_dir), points) in enumerate(groups.items()):
        ax = fig.add_subplot(rows, cols, i + 1, sharex=first)
        first = first or ax
        t = [_dt(p["ts_ms"]) for p in points]
        ax.plot(t, [p["available"] / GIB for p in points], color=COLORS[0], label="available")
        if points[0]["soft"] is not None:
            for key, color in (("soft", COLORS[3]), ("hard", COLORS[1])):
                ax.plot(t, [p[key] / GIB for p in points], color=color, linestyle="--",
                        label=f"{key} limit (available bytes)")
        ax.set_title(f"broker {broker} {log_dir}" + (f" ({cluster})" if cluster else ""), fontsize=9, y=1.0)
        ax.set_ylabel("GiB available", fontsize=8)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=7)
        plain_numbers(ax)
        time_axis_style(ax, title=i >= n - cols)
        if i < n - cols:
            ax.tick_params(labelbottom=False)
    handles, labels = first.get_legend_handles_labels() if first is not None else ([], [])
    fig.legend(handles, labels, loc="upper center", ncol=len(labels) or 1, fontsize=8, frameon=False)
    # the legend and each title above, the y labels beside, the dates below the last row
    place_grid(fig, rows, cols, left=0.75, right=0.4, top=0.65, bottom=0.8, gap_w=0.9, gap_h=0.45)
    return fig


@dataclass
class StorageReportData:
    """Small results for the report: the evaluation summaries (`main`, and `compare` when a second
    configuration was evaluated), the per-bucket `volume_series` of the `volumes_shown` volumes (of
    `volumes_total`) closest to their limits, and the inputs' read counts."""

    main: EvaluationSummary
    compare: EvaluationSummary | None
    volume_series: list[dict[str, Any]]
    volumes_shown: int
    volumes_total: int
    reads: Sequence[dict[str, Any]]


def _throttled_line(s: EvaluationSummary) -> str:
    d = s.as_dict()
    periods = len({(p["cluster"], p["observing_broker_id"], p["start_ms"]) for p in s.periods})
    return (f"{_label(s)}: throttled {duration(d['time_throttled_seconds'])} over {d['decisions']:,} "
            f"decisions (fully blocked {duration(d['time_blocked_seconds'])}), in {periods} period(s)")


def build_sections(data: StorageReportData) -> list[Section]:
    """The report's storage quota section."""
    main, compare, volume_series, reads = data.main, data.compare, data.volume_series, data.reads
    volumes_shown, volumes_total = data.volumes_shown, data.volumes_total
    s = Section("Storage volume quotas")
    s.now += now_entries(main)
    d = main.as_dict()
    s.text(f"Throttle factor decisions of the {_label(main)} over {d['decisions']:,} collection rounds"
           + (f", compared with the {_label(compare)}." if compare else "."))
    volume = [p for p in main.periods if p["reason"] is None]
    fallback = [p for p in main.periods if p["reason"] is not None]
    throttled_now = [e for e in s.now if e.group == "throttled"]
    s.kpis([("time throttled", duration(d["time_throttled_seconds"])),
            ("fully blocked", duration(d["time_blocked_seconds"])),
            ("throttled by a volume from", when_text(min((p["start_ms"] for p in volume), default=None))
             if volume else "never"),
            ("periods by a volume / by the fallback", f"{len(volume)} / {len(fallback)}"),
            ("throttled at the end", "yes" if throttled_now else "no")])
    for summary in (main, compare):
        if summary is None:
            continue
        if summary.as_dict()["first_throttled"]:
            s.note(_throttled_line(summary))
        else:
            s.info(f"{_label(summary)}: never throttled over {summary.as_dict()['decisions']:,} decisions.",
                   ok=True)

    s.heading("Throttled periods")
    s.text("Each period is a run of rounds with a throttle factor below 1 and one cause: the fallback "
           "factor (a failed collection, or an active broker without volumes) or the volume past its "
           "limits. It lasts until the next round with another cause or with no throttling.")
    rows = []
    for p in main.periods:
        end = p["end_ms"]
        rows.append(((p["cluster"] or "—") + ("" if p["observing_broker_id"] is None
                                              else f" broker {p['observing_broker_id']}"),
                     when_text(p["start_ms"]), when_text(end) if end is not None else "still at the end",
                     duration((end - p["start_ms"]) / 1000) if end is not None else "—",
                     p["rounds"], round(p["lowest_factor"], 3), cause_text(p)))
    s.table(["unit", "from", "until", "lasted", "rounds", "lowest factor", "cause"], rows,
            empty="The throttle factor was never below 1.")
    if any(p["of"] > PERIODS for p in main.periods):
        s.note(f"Only the first {PERIODS} periods of each unit are listed.")

    s.heading("Throttle factor over time")
    series = [main, *([compare] if compare else [])]
    s.figure(_factor_figure(series),
             "The throttle factor multiplies the produce quota (1.0: no throttling, 0.0: production "
             "blocked). Each line is the lowest factor of its evaluation in each time bucket (for the "
             "local source, of any broker); crosses mark fallbacks.")

    s.heading("Available bytes per volume")
    if volume_series:
        caption = (f"The {volumes_shown} volumes (of {volumes_total}) that came closest to their limits, "
                   "lowest available bytes per time bucket")
        caption += (", with the soft and hard limits of each volume (ratio limits turned into bytes "
                    "of that volume)." if volume_series[0]["soft"] is not None else ".")
        s.figure(_volumes_figure(volume_series), caption)
    else:
        s.text("No volume observations.")

    s.heading("Fallback events")
    if main.fallbacks:
        s.table(["reason", "times applied", "rounds decided by the fallback"],
                [(reason_text(r), v["applied"], v["rounds"]) for r, v in main.fallbacks.items()])
        s.table(["time", "cluster", "observing broker", "reason", "factor", "active brokers without data"],
                [(_iso_text(e["ts"], seconds=True), e["cluster"], e["observing_broker_id"], e["reason"],
                  e["throttle_factor"], e["missing_brokers"]) for e in main.fallback_events])
        if len(main.fallback_events) == FALLBACK_EVENTS:
            s.note(f"Only the first {FALLBACK_EVENTS} fallback events are listed.")
    else:
        s.info("The fallback throttle factor was never applied.", ok=True)

    s.heading("Volumes that breached a limit")
    rows = []
    for b in main.breaches:
        total = b.get("total_bytes")
        deep = b["deepest_past_hard_bytes"]
        rows.append((b["cluster"], b["broker_id"], b["log_dir"] or "(all log dirs)",
                     _iso_text(b["first_soft_breach"]), _iso_text(b["first_hard_breach"]) or "never",
                     Num(size_text(deep)), Num(f"{deep / total:.2%}") if total else None,
                     b["lowest_volume_factor"]))
    s.table(["cluster", "broker", "log dir", "first soft breach", "first hard breach",
             "deepest past hard", "of the volume", "lowest factor"], rows,
            empty="No volume reached its soft limit.")

    if reads:
        s.heading("Telemetry")
        s.table(["input", "rows read", "used", "quarantined"],
                [(Path(r["input"]).name, r["read"], r["used"], r["quarantined"]) for r in reads])
    return [s]


def _iso_text(value: str | None, seconds: bool = False) -> str | None:
    """An ISO-8601 UTC time of the summary as the report writes times."""
    if not value:
        return None
    return when_text(round(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000), seconds)
