"""The report section "What runs out next": ranked tables and forecast cones (no Spark here), and
the "Now" lines of the volumes and backlogs closest to their limits and of what runs out next.

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

from quotaplane.backlog.report import age_text
from quotaplane.core.report import (
    NowEntry,
    Num,
    Section,
    legend_beside,
    place_grid,
    plain_numbers,
    rate_text,
    size_text,
    when_text,
)
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


def _contributors(row: Mapping[str, Any]) -> str:
    """The topics causing the growth, or why there are none."""
    top = row.get("top_contributors") or []
    if top:
        return ", ".join(f"{c['topic']} {c['share']:.0%}" for c in top)
    if row["method"] != "partitions":
        return "— (no partition sizes)"
    return "— (no topic grew)"


def band_text(low: float | None, high: float | None) -> str:
    """The band around a time to a limit: `5.7 d – 5.8 d`, one value when both ends are the same,
    `—` when neither end is forecast."""
    if low is None and high is None:
        return "—"
    return duration(low) if duration(low) == duration(high) else f"{duration(low)} – {duration(high)}"


def _where(row: Mapping[str, Any]) -> str:
    cluster = f" ({row['cluster']})" if row["cluster"] else ""
    return f"volume broker {row['broker_id']} {row['log_dir']}{cluster}"


def _backlog_use(b: Mapping[str, Any]) -> tuple[float, str]:
    """How close a backlog is to its quotas: the larger share of a quota it uses, and in words."""
    uses = []
    if b["size_limit"] >= 0:
        share = b["backlog_size_bytes"] / b["size_limit"] if b["size_limit"] > 0 else math.inf
        uses.append((share, f"backlog {size_text(b['backlog_size_bytes'])} of its "
                            f"{size_text(b['size_limit'])} size quota"))
    if b["time_limit"] > 0 and b["backlog_age_seconds"] is not None:
        uses.append((b["backlog_age_seconds"] / b["time_limit"],
                     f"oldest message {age_text(b['backlog_age_seconds'])} old, "
                     f"time quota {b['time_limit']:,} s"))
    if not uses:
        return 0.0, "age unknown"
    share, text = max(uses, key=lambda u: u[0])
    return share, text + (f" ({share:.0%})" if math.isfinite(share) else "")


def now_entries(data: ForecastReportData) -> list[NowEntry]:
    """The volumes and backlogs closest to their limits, the backlogs over a quota, and what reaches
    a limit next within the horizon."""
    out: list[NowEntry] = []
    for v in data.volumes:
        total, available, hard = v["total_bytes"], v["available_bytes"], v.get("hard_threshold_bytes")
        if hard is not None:
            headroom = available - hard
            state = (f"{size_text(available)} available, {size_text(headroom)} above its hard limit"
                     if headroom > 0 else f"{size_text(available)} available: at or past its hard limit "
                     f"({size_text(hard)})")
            out.append(NowEntry("closest", _where(v), state, rank=headroom / max(total, 1)))
        else:
            out.append(NowEntry("closest", _where(v), f"{size_text(available)} available of "
                                f"{size_text(total)}", rank=available / max(total, 1)))
        limit, seconds = (("hard limit", v["seconds_to_hard"]) if hard is not None
                          else ("full", v["seconds_to_full"]))
        if seconds:
            band = f" (band {band_text(v['low'], v['high'])})"
            out.append(NowEntry("next", _where(v), limit, f"in {duration(seconds)}{band}", rank=seconds))
    for b in data.backlogs:
        share, text = _backlog_use(b)
        what = f"backlog of {b['topic']}"
        if b["seconds_to_quota"] == 0:
            out.append(NowEntry("throttled", what, f"over its {b['quota_type']} quota: {text}", rank=1.0))
        else:
            out.append(NowEntry("closest", what, text, rank=1.0 - share))
            if b["seconds_to_quota"] is not None:
                out.append(NowEntry("next", what, f"{b['quota_type']} quota",
                                    f"in {duration(b['seconds_to_quota'])}", rank=b["seconds_to_quota"]))
    return out


def _cone(row: Mapping[str, Any], history: Sequence[tuple[int, int]], horizon_s: float) -> Figure:
    fig = Figure(figsize=(7.6, 3.0))
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
    limits = (("soft_threshold_bytes", "#f0b429", "soft limit"),
              ("hard_threshold_bytes", "#d64545", "hard limit"))
    for key, color, label in limits:
        if row.get(key) is not None:
            ax.axhline(row[key] / GIB, color=color, linestyle="--", linewidth=1, label=label)
    ax.set_xlabel(f"hours from the forecast time, {when_text(at)}", fontsize=8)
    ax.set_ylabel("GiB available")
    ax.set_title(f"broker {row['broker_id']} {row['log_dir']}", fontsize=9)
    plain_numbers(ax)
    plain_numbers(ax, "x")
    legend = legend_beside(ax, fontsize=7)
    place_grid(fig, left=0.85, right=0.15 + legend, top=0.3, bottom=0.55)
    return fig


def build_sections(data: ForecastReportData) -> list[Section]:
    s = Section("What runs out next")
    s.now += now_entries(data)
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
    s.text("Top contributors are the topics whose partitions grew the volume, which needs the "
           "partition_sizes input (the live service lands it); without it a volume's growth is the "
           "trend of its used bytes and no topic can be named.")
    s.table(["broker", "log dir", "available", "growth", "to soft limit", "to hard limit", "band", "to full",
             "method", "top contributors"],
            [(r["broker_id"], r["log_dir"], Num(size_text(r["available_bytes"])),
              Num(rate_text(r["growth_bytes_per_second"])),
              Num(duration(r["seconds_to_soft"])), Num(duration(r["seconds_to_hard"])),
              band_text(r["low"], r["high"]), Num(duration(r["seconds_to_full"])),
              r["method"],
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
    s.table(["topic", "backlog", "size quota", "age", "time quota", "to quota", "quota", "band"],
            [(b["topic"], Num(size_text(b["backlog_size_bytes"])),
              Num(size_text(b["size_limit"])) if b["size_limit"] >= 0 else "none",
              Num(age_text(b["backlog_age_seconds"])),
              Num(f"{b['time_limit']:,} s") if b["time_limit"] > 0 else "none",
              Num(duration(b["seconds_to_quota"])), b["quota_type"] or "—",
              band_text(b["low"], b["high"])) for b in backlogs[:LISTED]],
            empty="No backlog topic with a quota was checked in the window.")
    return [s]
