"""The report section "What runs out next": ranked tables and forecast cones (no Spark here).

The stage (or any caller) gives the forecast rows (dicts with the columns of `storage_forecast`
and `backlog_forecast`) and, for the volumes plotted, their observed history as
`(ts_ms, available_bytes)` points.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from matplotlib.figure import Figure

from quotaplane.core.report import Section, place_grid
from quotaplane.forecast.engine.timing import band

GIB = float(1 << 30)
PLOTTED = 4
LISTED = 15
VolumeKey = tuple[str, int, str]


@dataclass
class ForecastReportData:
    volumes: list[dict[str, Any]]
    backlogs: list[dict[str, Any]]
    histories: Mapping[VolumeKey, Sequence[tuple[int, int]]] = field(default_factory=dict)
    window: str = "6h"
    horizon: str = "7d"
    horizon_seconds: float = 7 * 86400.0


def _rank(seconds: float | None) -> float:
    return math.inf if seconds is None else seconds


def ranked_volumes(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Soonest first: by seconds to the hard limit, then to full, then by name."""
    return sorted(rows, key=lambda r: (_rank(r["seconds_to_hard"]), _rank(r["seconds_to_full"]),
                                       r["cluster"], r["broker_id"], r["log_dir"]))


def duration(seconds: float | None) -> str:
    """A time to a limit as the report and the console write it: `now`, `5.8 d`, `2.5 h`, `12.0 min`,
    `10 s`; `—` when none is forecast."""
    if seconds is None:
        return "—"
    if seconds == 0:
        return "now"
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"


def next_hard_limit(volumes: Sequence[Mapping[str, Any]]) -> str | None:
    """The console's line on the volume that reaches its hard limit first (one already there does
    not reach it); None when none does within the horizon."""
    upcoming = [v for v in ranked_volumes(volumes) if v["seconds_to_hard"]]
    if not upcoming:
        return None
    v = upcoming[0]
    return (f"forecast: next to reach its hard limit: broker {v['broker_id']} {v['log_dir']} in "
            f"{duration(v['seconds_to_hard'])}")


def _mib(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value / (1 << 20), digits)


def _contributors(row: Mapping[str, Any]) -> str:
    return ", ".join(f"{c['topic']} {c['share']:.0%}" for c in row.get("top_contributors") or [])


def _cone(row: Mapping[str, Any], history: Sequence[tuple[int, int]], horizon_s: float) -> Figure:
    fig = Figure(figsize=(5.2, 3.0))
    ax = fig.add_subplot(1, 1, 1)
    at = row["at_ms"]
    hours = [(t - at) / 3_600_000 for t, _ in history]
    ax.plot(hours, [a / GIB for _, a in history], color="#1f5fbf", label="available (observed)")
    growth = row["growth_bytes_per_second"] or 0.0
    slow, fast = band(growth, row["recent_growth_bytes_per_second"])
    to_full = row["seconds_to_full"]
    span = min(horizon_s, max(3600.0, 1.5 * to_full) if to_full else 86400.0)
    available = row["available_bytes"]
    acceleration = row.get("acceleration_bytes_per_second_squared") or 0.0
    steps = [span * i / 48 for i in range(49)]
    paths = ((growth, acceleration, "-", "forecast"), (fast, acceleration, ":", "band"),
             (slow, 0.0, ":", None))
    for g, a, style, label in paths:
        ax.plot([t / 3600 for t in steps], [max(0.0, available - g * t - a * t * t / 2) / GIB for t in steps],
                color="#c0392b", linestyle=style, label=label)
    limits = (("soft_threshold_bytes", "#f0b429", "soft"), ("hard_threshold_bytes", "#d64545", "hard"))
    for key, color, label in limits:
        if row.get(key) is not None:
            ax.axhline(row[key] / GIB, color=color, linestyle="--", linewidth=1, label=label)
    ax.set_xlabel("hours from the forecast time")
    ax.set_ylabel("GiB available")
    ax.set_title(f"broker {row['broker_id']} {row['log_dir']}", fontsize=9)
    ax.legend(fontsize=7)
    place_grid(fig, left=0.85, right=0.15, top=0.3, bottom=0.55)
    return fig


def build_sections(data: ForecastReportData) -> list[Section]:
    s = Section("What runs out next")
    s.text(f"Forecasts fit the last {data.window} of observations and look {data.horizon} ahead; a time "
           "is shown only when the limit is reached within that horizon. Volume growth is the sum of "
           "the growth of the partition replicas on the volume (retention-aware: a partition at its "
           "retention limit grows only as its retained size does), or the trend of its used bytes "
           "where partition sizes are not collected (docs/forecast.md).")
    ranked = ranked_volumes(data.volumes)
    soon = [r for r in ranked if r["seconds_to_hard"] is not None or r["seconds_to_full"] is not None]
    s.kpis([("volumes forecast", len(data.volumes)), ("reaching a limit within the horizon", len(soon)),
            ("backlog topics forecast", len(data.backlogs)),
            ("backlogs reaching a quota",
             sum(1 for b in data.backlogs if b["seconds_to_quota"] is not None))])
    s.heading("Volumes, soonest first")
    s.table(["broker", "log dir", "available GiB", "growth MiB/s", "to soft", "to hard", "band", "to full",
             "method", "top contributors"],
            [(r["broker_id"], r["log_dir"], round(r["available_bytes"] / GIB, 1),
              _mib(r["growth_bytes_per_second"], 3),
              duration(r["seconds_to_soft"]), duration(r["seconds_to_hard"]),
              f"{duration(r['low'])} – {duration(r['high'])}", duration(r["seconds_to_full"]), r["method"],
              _contributors(r)) for r in ranked[:LISTED]], empty="No volume was observed in the window.")
    for r in ranked[:PLOTTED]:
        history = data.histories.get((r["cluster"], r["broker_id"], r["log_dir"]))
        if history:
            when = datetime.fromtimestamp(r["at_ms"] / 1000, UTC)
            s.figure(_cone(r, history, data.horizon_seconds),
                     f"Broker {r['broker_id']} {r['log_dir']}: observed available bytes and the forecast "
                     f"cone from {when:%Y-%m-%d %H:%M} UTC (expected growth, and the band of the window's "
                     "and its second half's growth).")
    s.heading("Backlogs, soonest first")
    backlogs = sorted(data.backlogs, key=lambda b: (_rank(b["seconds_to_quota"]), b["topic"]))
    s.table(["topic", "backlog MiB", "size quota MiB", "age s", "time quota s", "to quota", "quota", "band"],
            [(b["topic"], round(b["backlog_size_bytes"] / (1 << 20), 2),
              _mib(b["size_limit"] if b["size_limit"] >= 0 else None, 2), b["backlog_age_seconds"],
              None if b["time_limit"] <= 0 else b["time_limit"], duration(b["seconds_to_quota"]),
              b["quota_type"],
              f"{duration(b['low'])} – {duration(b['high'])}") for b in backlogs[:LISTED]],
            empty="No backlog topic with a quota was checked in the window.")
    return [s]
