"""The report section of Pulsar backlog quotas: backlog age against its limit per topic, eviction
runs over time, and which subscriptions hold the oldest unacknowledged message."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from quotaplane.core.report import (
    TIME_SERIES_MARGINS,
    Num,
    Section,
    legend_beside,
    place_grid,
    plain_numbers,
    size_text,
    time_axis,
    time_axis_style,
)

TOP_TOPICS = 20


@dataclass
class BacklogReportData:
    """Small aggregates the Spark stage computes for the report (`quotaplane.backlog.spark.report_data`).

    - `topics`: one row per topic: topic, namespace, ticks, latest_age, max_age, time_limit,
      latest_size, max_size, size_limit, size_exceeded_ticks, time_exceeded_ticks, size_evictions,
      time_evictions, oldest_subscription (at the last tick), age_usage (max_age / time_limit).
    - `age_series`: ts_ms, topic, age, time_limit for the topics plotted.
    - `eviction_series`: ts_ms, size_runs, time_runs (eviction runs per time bucket).
    - `holders`: topic, subscription, ticks (how many ticks it held the oldest message).
    """

    kpis: list[tuple[str, Any]]
    topics: pd.DataFrame
    age_series: pd.DataFrame
    eviction_series: pd.DataFrame
    holders: pd.DataFrame
    notes: list[str] = field(default_factory=list)


def age_text(seconds: Any) -> str:
    """A backlog's age as every table of the report writes it: `2,851 s`, or `unknown` when it has no
    age base (the ledger holding the oldest message is still open, docs/backlog.md; the forecast
    counts it as 0)."""
    if seconds is None or pd.isna(seconds) or seconds < 0:
        return "unknown"
    return f"{int(seconds):,} s"


def age_figure(series: pd.DataFrame) -> Figure:
    fig = Figure(figsize=(10, 4))
    ax = fig.add_subplot(1, 1, 1)
    for i, (topic, rows) in enumerate(series.groupby("topic", sort=True)):
        rows = rows.sort_values("ts_ms")
        color = f"C{i % 10}"
        ax.plot(time_axis(rows["ts_ms"]), rows["age"], color=color, label=topic.split("/", 2)[-1], lw=1.2)
        limits = rows["time_limit"]
        if (limits > 0).any():
            ax.plot(time_axis(rows["ts_ms"]), limits.where(limits > 0), color=color, ls="--", lw=0.9)
    ax.set_ylabel("backlog age (s)")
    ax.set_title("Backlog age (solid) against the time quota (dashed)")
    ax.grid(alpha=0.3)
    plain_numbers(ax)
    time_axis_style(ax)
    handles, labels = ax.get_legend_handles_labels()
    handles.append(Line2D([], [], color="0.3", ls="--", lw=0.9))
    labels.append("time quota (dashed, the topic's colour)")
    legend = legend_beside(ax, fontsize=7, handles=handles, labels=labels) if len(series) else 0.0
    place_grid(fig, **{**TIME_SERIES_MARGINS, "right": 0.15 + legend})
    return fig


def evictions_figure(series: pd.DataFrame) -> Figure:
    fig = Figure(figsize=(10, 3.2))
    ax = fig.add_subplot(1, 1, 1)
    rows = series.sort_values("ts_ms")
    x = time_axis(rows["ts_ms"])
    ax.step(x, rows["size_runs"].cumsum(), where="post", label="size (destination_storage)")
    ax.step(x, rows["time_runs"].cumsum(), where="post", label="time (message_age)")
    ax.set_ylabel("eviction runs (cumulative)")
    ax.set_title("Backlog evictions over time, all topics")
    ax.grid(alpha=0.3)
    plain_numbers(ax)
    time_axis_style(ax)
    legend = legend_beside(ax, fontsize=8)
    place_grid(fig, **{**TIME_SERIES_MARGINS, "right": 0.15 + legend})
    return fig


def _size_limit(value: Any) -> Any:
    """A negative size limit is no limit (0 is a limit every backlog reaches)."""
    return "none" if value is None or pd.isna(value) or value < 0 else Num(size_text(int(value)))


def _time_limit(value: Any) -> Any:
    """A time limit <= 0 is no limit."""
    return "none" if value is None or pd.isna(value) or value <= 0 else Num(f"{int(value):,} s")


def build_sections(data: BacklogReportData) -> list[Section]:
    """The backlog section of the report."""
    s = Section("Pulsar backlog quotas (PIP-323)")
    s.kpis(data.kpis)
    for note in data.notes:
        s.note(note)
    s.heading("Backlog age against its limit")
    s.text("The age of the oldest unacknowledged message at each check tick, for the topics closest "
           "to (or furthest past) their time quota. The age is whole seconds; the time quota is "
           "exceeded when the oldest message is strictly older than the limit, in milliseconds.")
    if len(data.age_series):
        s.figure(age_figure(data.age_series), "Backlog age per topic, with its time quota")
    topics = data.topics.head(TOP_TOPICS)
    s.table(
        ["topic", "age now", "highest age", "time quota", "highest age / quota", "backlog now",
         "size quota", "ticks over size", "ticks over time", "evictions size", "evictions time"],
        [[r.topic, Num(age_text(r.latest_age)), Num(age_text(r.max_age)), _time_limit(r.time_limit),
          None if pd.isna(r.age_usage) else Num(f"{float(r.age_usage):.0%}"),
          Num(size_text(int(r.latest_size))),
          _size_limit(r.size_limit), int(r.size_exceeded_ticks), int(r.time_exceeded_ticks),
          int(r.size_evictions), int(r.time_evictions)] for r in topics.itertuples()],
        empty="No backlog snapshots.")
    s.text("An age is unknown while the ledger holding the oldest unacknowledged message is still open "
           "(Pulsar's estimate has no base then); such an age never exceeds the time quota.")
    s.heading("Evictions over time")
    s.text("Eviction runs (consumer_backlog_eviction) per quota type: one run per topic and tick whose "
           "quota was exceeded under that policy, whether or not it had anything to skip.")
    if len(data.eviction_series) and data.eviction_series[["size_runs", "time_runs"]].to_numpy().sum() > 0:
        s.figure(evictions_figure(data.eviction_series), "Cumulative eviction runs, by quota type")
    else:
        s.text("No eviction ran.")
    s.heading("Who holds the oldest message")
    s.text("The subscription holding a topic's oldest unacknowledged message defines the topic "
           "backlog; these subscriptions held it for the most check ticks.")
    s.table(["topic", "subscription", "ticks holding the oldest message"],
            [[r.topic, r.subscription, int(r.ticks)] for r in data.holders.itertuples()],
            empty="No subscription had a backlog.")
    return [s]

