"""The storage quota section of the report: volumes against their thresholds, the throttle factor
over time (both configurations when compared), fallback events and the volumes that breached.

Inputs are plain data (`quotaplane.storage.summary`), so this
module only draws and writes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from matplotlib.figure import Figure

from quotaplane.core.report import Section, place_grid
from quotaplane.storage.summary import FALLBACK_EVENTS, EvaluationSummary

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
                 f"(fully blocked {duration(d['time_blocked_seconds'])}), first at {d['first_throttled']}")
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


def _factor_figure(summaries: Sequence[EvaluationSummary]) -> Figure:
    fig = Figure(figsize=(10, 3.4))
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
    ax.legend(loc="lower left", fontsize=8)
    fig.autofmt_xdate()
    # the y label and its ticks beside, the slanted dates below; drawn once (see `place_grid`)
    place_grid(fig, left=0.7, right=0.15, top=0.15, bottom=0.8)
    return fig


def _volumes_figure(series: list[dict[str, Any]]) -> Figure:
    """Small multiples, in the order of `series` (closest to its limits first)."""
    groups: dict[tuple[Any, Any, Any], list[dict[str, Any]]] = defaultdict(list)
    for p in series:
        groups[(p["cluster"], p["broker_id"], p["log_dir"])].append(p)
    n = len(groups)
    cols = 2 if n > 1 else 1
    rows = -(-n // cols)
    fig = Figure(figsize=(10, 2.6 * rows))
    for i, ((cluster, broker, log_dir), points) in enumerate(groups.items()):
        ax = fig.add_subplot(rows, cols, i + 1)
        t = [_dt(p["ts_ms"]) for p in points]
        ax.plot(t, [p["available"] / GIB for p in points], color=COLORS[0], label="available")
        if points[0]["soft"] is not None:
            for key, color in (("soft", COLORS[3]), ("hard", COLORS[1])):
                ax.plot(t, [p[key] / GIB for p in points], color=color, linestyle="--",
                        label=f"{key} threshold")
        # placed, not fitted above the y axis' offset text: the axis starts at 0 and has none
        ax.set_title(f"broker {broker} {log_dir}" + (f" ({cluster})" if cluster else ""), fontsize=9, y=1.0)
        ax.set_ylabel("GiB")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=7)
        if i == 0:
            ax.legend(fontsize=7, loc="best")
    fig.autofmt_xdate()
    # room for a title above each (dates are written below the last row only) and the y labels
    # beside; drawn once (see `place_grid`)
    place_grid(fig, rows, cols, left=0.7, right=0.1, top=0.3, bottom=0.8, gap_w=0.75, gap_h=0.45)
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


def build_sections(data: StorageReportData) -> list[Section]:
    """The report's storage quota section."""
    main, compare, volume_series, reads = data.main, data.compare, data.volume_series, data.reads
    volumes_shown, volumes_total = data.volumes_shown, data.volumes_total
    s = Section("Storage volume quotas")
    d = main.as_dict()
    s.text(f"Throttle factor decisions of the {_label(main)} over {d['decisions']} collection rounds"
           + (f", compared with the {_label(compare)}." if compare else "."))
    kpis: list[tuple[str, Any]] = [("time throttled", duration(d["time_throttled_seconds"])),
                                   ("fully blocked", duration(d["time_blocked_seconds"])),
                                   ("first throttled", d["first_throttled"] or "never"),
                                   ("fallbacks applied", sum(v["applied"] for v in main.fallbacks.values()))]
    if compare is not None:
        c = compare.as_dict()
        kpis.append((f"{compare.config.evaluation} source: time throttled",
                     duration(c["time_throttled_seconds"]) if c["first_throttled"] else "never"))
    s.kpis(kpis)
    if compare is not None:
        for line in console_lines(compare)[:1] + console_lines(main)[:1]:
            s.note(line)

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
        caption += (", with the soft and hard thresholds of each volume (ratio limits turned into bytes "
                    "of that volume)." if volume_series[0]["soft"] is not None else ".")
        s.figure(_volumes_figure(volume_series), caption)
    else:
        s.text("No volume observations.")

    s.heading("Fallback events")
    if main.fallbacks:
        s.table(["reason", "times applied", "rounds decided by the fallback"],
                [(r, v["applied"], v["rounds"]) for r, v in main.fallbacks.items()])
        s.table(["time (UTC)", "cluster", "observing broker", "reason", "factor",
                 "active brokers without data"],
                [(e["ts"], e["cluster"], e["observing_broker_id"], e["reason"], e["throttle_factor"],
                  e["missing_brokers"]) for e in main.fallback_events])
        if len(main.fallback_events) == FALLBACK_EVENTS:
            s.note(f"Only the first {FALLBACK_EVENTS} fallback events are listed.")
    else:
        s.text("The fallback throttle factor was never applied.")

    s.heading("Volumes that breached a limit")
    rows = []
    for b in main.breaches:
        total = b.get("total_bytes")
        deep = b["deepest_past_hard_bytes"]
        rows.append((b["cluster"], b["broker_id"], b["log_dir"] or "(all log dirs)", b["first_soft_breach"],
                     b["first_hard_breach"] or "no", round(deep / GIB, 3),
                     f"{deep / total:.2%}" if total else "—", b["lowest_volume_factor"]))
    s.table(["cluster", "broker", "log dir", "first soft breach", "first hard breach",
             "deepest past hard (GiB)", "of the volume", "lowest factor"], rows,
            empty="No volume reached its soft limit.")

    if reads:
        s.heading("Telemetry")
        s.table(["input", "read", "used", "quarantined"],
                [(r["input"], r["read"], r["used"], r["quarantined"]) for r in reads])
    return [s]
