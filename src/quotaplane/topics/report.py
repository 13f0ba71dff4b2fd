"""The report section of topic bytes-in quotas: which topics went over their threshold, when, and
how much was dropped (spec: kafka-topic-bytes-in-quota)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
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
    rate_text,
    size_text,
    time_axis,
    time_axis_style,
)

TOP_TOPICS = 8


@dataclass
class TopicReportData:
    """Small aggregates for the report, plain data (computed with Spark by
    `quotaplane.topics.spark.report_data.collect_report_data`).

    - `over`: one row per (broker_id, topic) with throttled requests: first_throttled_ms,
      last_throttled_ms, throttled_requests, throttled_bytes, accepted_bytes, max_topic_rate,
      min_topic_threshold, max_topic_threshold, threshold_source (at the last request).
    - `errors`: one row per (broker_id, topic) with error requests: error_requests, error_bytes,
      max_bytes (largest batch).
    - `series`: a row per plotted point (interval_start_ms, broker_id, topic, max_topic_rate,
      max_topic_threshold, throttled_bytes, accepted_bytes) of the topics plotted; a point spans
      `interval_ms`: one interval, or a whole multiple of it on a long span.
    - `rejected`: the rejected threshold changes, as error lines.
    """

    kpis: list[tuple[str, Any]]
    over: pd.DataFrame
    errors: pd.DataFrame
    series: pd.DataFrame
    interval_ms: int
    rejected: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


MIB = float(1 << 20)


def _when(ms: Any) -> str:
    return datetime.fromtimestamp(int(ms) / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def rate_figure(series: pd.DataFrame, interval_ms: int) -> Figure:
    """Highest one-minute rate per point (`interval_ms` wide, solid) against the topic's threshold
    (dashed)."""
    fig = Figure(figsize=(10, 4))
    ax = fig.add_subplot(1, 1, 1)
    for i, ((broker_id, topic), rows) in enumerate(series.groupby(["broker_id", "topic"], sort=True)):
        rows = rows.sort_values("interval_start_ms")
        when = time_axis(rows["interval_start_ms"])
        color = f"C{i % 10}"
        ax.plot(when, rows["max_topic_rate"] / MIB, color=color, lw=1.2,
                label=f"{topic} @ broker {broker_id}")
        ax.plot(when, rows["max_topic_threshold"] / MIB, color=color, lw=0.9, ls="--")
    ax.set_ylabel("MiB/s")
    ax.set_title(f"Topic one-minute bytes-in rate (solid, highest per {interval_ms / 1000:g} s) "
                 "and threshold (dashed)")
    ax.grid(alpha=0.3)
    plain_numbers(ax)
    time_axis_style(ax)
    handles, labels = ax.get_legend_handles_labels()
    handles.append(Line2D([], [], color="0.3", ls="--", lw=0.9))
    labels.append("threshold (dashed, the topic's colour)")
    legend = legend_beside(ax, fontsize=7, handles=handles, labels=labels) if len(series) else 0.0
    place_grid(fig, **{**TIME_SERIES_MARGINS, "right": 0.15 + legend})
    return fig


def dropped_figure(series: pd.DataFrame, interval_ms: int) -> Figure:
    """Throttled bytes per point (`interval_ms` wide), stacked by topic: one filled step outline
    per topic (a bar per point would be an artist per point)."""
    fig = Figure(figsize=(10, 3.2))
    ax = fig.add_subplot(1, 1, 1)
    if len(series):
        table = series.assign(key=series["topic"] + " @ " + series["broker_id"].astype(str)).pivot_table(
            index="interval_start_ms", columns="key", values="throttled_bytes", aggfunc="sum", fill_value=0)
        # every point, with a zero at the end of each gap, so each step spans its own point only
        starts = table.index.to_numpy()
        edges = np.union1d(starts, starts + interval_ms)
        table = table.reindex(edges, fill_value=0)
        when = time_axis(edges)
        bottom = np.zeros(len(edges))
        for i, key in enumerate(table.columns):
            top = bottom + table[key].to_numpy() / MIB
            ax.fill_between(when, bottom, top, step="post", color=f"C{i % 10}", label=key, lw=0)
            bottom = top
    ax.set_ylabel("throttled MiB")
    ax.set_title(f"Bytes dropped by the quota per {interval_ms / 1000:g} s")
    ax.grid(alpha=0.3)
    plain_numbers(ax)
    time_axis_style(ax)
    legend = legend_beside(ax, fontsize=7)
    place_grid(fig, **{**TIME_SERIES_MARGINS, "right": 0.15 + legend})
    return fig


def build_sections(data: TopicReportData) -> list[Section]:
    """The section of `quotaplane run`'s report: KPIs, topics over their threshold (with the rate and
    dropped-bytes figures) and requests above `message.max.bytes`."""
    s = Section("Topic bytes-in quotas")
    s.text("Each broker drops a produce request when its one-minute bytes-in rate is above "
           "total.bytes.in.per.sec.threshold and the topic's one-minute rate is above the topic's "
           "threshold (explicit, or its default share); a record batch above message.max.bytes is an "
           "error. Rates are Yammer one-minute meters ticked every 5 s in event time.")
    s.kpis(data.kpis)
    for note in data.notes:
        s.note(note)
    if data.rejected:
        s.note(f"{len(data.rejected)} threshold change(s) were rejected and kept out of force: "
               + "; ".join(data.rejected[:5]) + ("; …" if len(data.rejected) > 5 else ""))
    s.heading("Topics over their threshold")
    over = data.over.sort_values(["throttled_bytes", "broker_id", "topic"], ascending=[False, True, True])
    s.table(
        ["broker", "topic", "first throttled", "last throttled", "throttled requests",
         "throttled bytes", "share dropped", "peak one-minute rate", "threshold", "source"],
        [[int(r.broker_id), r.topic, _when(r.first_throttled_ms), _when(r.last_throttled_ms),
          int(r.throttled_requests), Num(size_text(int(r.throttled_bytes))),
          Num(f"{r.throttled_bytes / max(1, r.throttled_bytes + r.accepted_bytes):.1%}"),
          Num(rate_text(float(r.max_topic_rate))), Num(_threshold_range(r)), r.threshold_source]
         for r in over.itertuples()],
        empty="No request was throttled.")
    if len(data.series):
        s.figure(rate_figure(data.series, data.interval_ms), "Topics with the most dropped bytes: peak "
                 f"one-minute rate per {data.interval_ms / 1000:g} s and threshold")
        s.figure(dropped_figure(data.series, data.interval_ms),
                 f"Throttled bytes per {data.interval_ms / 1000:g} s")
    s.heading("Requests above message.max.bytes")
    errors = data.errors.sort_values(["error_bytes", "broker_id", "topic"], ascending=[False, True, True])
    s.table(["broker", "topic", "error requests", "error bytes", "largest batch"],
            [[int(r.broker_id), r.topic, int(r.error_requests), Num(size_text(int(r.error_bytes))),
              Num(size_text(int(r.max_bytes)))] for r in errors.itertuples()],
            empty="No request was above message.max.bytes.")
    return [s]


def _threshold_range(row: Any) -> str:
    low, high = int(row.min_topic_threshold), int(row.max_topic_threshold)
    return rate_text(low) if low == high else f"{rate_text(low)} – {rate_text(high)}"
