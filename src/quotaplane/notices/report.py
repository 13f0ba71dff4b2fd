"""The report section of producer throttle notices: what the connection pauses cost with PIP-385 and
without it, which innocent topics they stalled, and when the notices came (docs/notices.md, Outputs).

The section is built from small aggregates only (`NoticeReportData`), never from the traffic rows:
the `notice_comparison` rows and a timeline of the notices per time bucket. The reference side builds
them with `report_data_from_notices`; the Spark stage collects the same aggregates from
the brokers' sums of their notices (`quotaplane.notices.timeline`: the bucket rule).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from quotaplane.core.report import (
    Num,
    Section,
    legend_beside,
    place_grid,
    plain_numbers,
    text_width_inches,
    time_axis,
    time_axis_style,
)
from quotaplane.notices.engine.evaluate import (
    COMPARISON_COLUMNS,
    IN_TIME,
    LATE,
    REASON_ORDER,
    UNSUPPORTED,
    Notice,
    compare,
)
from quotaplane.notices.timeline import (
    BUCKET_CHOICES_MS,
    TIMELINE_COLUMNS,
    bucket_ms_for,
    timeline_rows,
)

TOP_TOPICS = 10
REASONS = tuple(r.name for r in REASON_ORDER)
REASON_LABELS = {
    "TopicProduceQuotaExceeded": "topic rate",
    "ResourceGroupProduceQuotaExceeded": "resource group rate",
    "BrokerProduceQuotaExceeded": "broker rate",
    "ConnectionPendingMessagesBreach": "pending requests",
    "MessageBufferSizeBreach": "publish buffer",
}
_TEXT = ("broker", "topic", "reason")
_SUMS = ("notices", IN_TIME, LATE, UNSUPPORTED, "pause_for_millis_total", "connection_paused_ms",
         "connection_paused_ms_without_notices", "stalled_topics", "stalled_topics_without_notices")


def _frame(rows: pd.DataFrame | Iterable[Mapping[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    if frame.empty:
        return pd.DataFrame({c: pd.Series(dtype="object" if c in _TEXT else "int64") for c in columns})
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"missing columns: {', '.join(missing)}")
    return frame.loc[:, list(columns)].reset_index(drop=True)


@dataclass
class NoticeReportData:
    """Small aggregates for the report (docs/notices.md, Outputs), plain data.

    - `kpis`: (label, value) pairs (`notice_kpis` makes the usual ones from the comparison rows).
    - `comparison`: the `notice_comparison` rows, one per (broker, topic, reason), `COMPARISON_COLUMNS`.
    - `timeline`: one row per (bucket_start_ms, reason) with notices: `TIMELINE_COLUMNS`, the notices
      starting in the bucket and the sums of their `connection_paused_ms` and
      `connection_paused_ms_without_notices` (a pause is counted in the bucket of its notice).
    - `bucket_ms`: the timeline's bucket (`bucket_ms_for`).

    Lists of dicts are accepted for `comparison` and `timeline` and turned into frames.
    """

    kpis: list[tuple[str, Any]]
    comparison: pd.DataFrame
    timeline: pd.DataFrame
    bucket_ms: int = BUCKET_CHOICES_MS[0]
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.comparison = _frame(self.comparison, COMPARISON_COLUMNS)
        self.timeline = _frame(self.timeline, TIMELINE_COLUMNS)
        if self.bucket_ms <= 0:
            raise ValueError(f"bucket_ms must be positive: {self.bucket_ms}")


def notice_kpis(comparison: pd.DataFrame | Iterable[Mapping[str, Any]]) -> list[tuple[str, Any]]:
    """The section's KPIs from the comparison rows: notices by receipt, connection pause time and
    innocent topics stalled, with notices and without."""
    c = _frame(comparison, COMPARISON_COLUMNS)
    total = int(c["notices"].sum())

    def share(column: str) -> str:
        count = int(c[column].sum())
        return f"{count:,} ({count / total:.0%})" if total else "0"

    return [
        ("notices", f"{total:,}"),
        ("receipts in time", share(IN_TIME)),
        ("late or no receipt", share(LATE)),
        ("unsupported", share(UNSUPPORTED)),
        ("connection pause, with notices", _seconds(c["connection_paused_ms"].sum())),
        ("without notices", _seconds(c["connection_paused_ms_without_notices"].sum())),
        ("innocent topics stalled, with / without",
         f"{int(c['stalled_topics'].sum()):,} / {int(c['stalled_topics_without_notices'].sum()):,}"),
    ]


def report_data_from_notices(notices: Sequence[Notice], kpis: list[tuple[str, Any]] | None = None,
                             notes: list[str] | None = None) -> NoticeReportData:
    """The report data of the reference engine's notices (`kpis` None: `notice_kpis`)."""
    comparison = compare(notices)
    times = [n.ts_ms for n in notices]
    bucket_ms = bucket_ms_for(min(times, default=None), max(times, default=None))
    return NoticeReportData(kpis if kpis is not None else notice_kpis(comparison), comparison,
                            timeline_rows(notices, bucket_ms), bucket_ms, list(notes or []))


def _seconds(ms: Any) -> str:
    return f"{float(ms) / 1000:,.1f} s"


def _short(topic: str) -> str:
    """`persistent://public/default/t` as `public/default/t` (non-persistent topics keep their domain)."""
    return topic.removeprefix("persistent://")


def _color(reason: str) -> str:
    return f"C{REASONS.index(reason) % 10}" if reason in REASONS else "C9"


def _reasons_in(frame: pd.DataFrame) -> list[str]:
    present = set(frame["reason"])
    return [r for r in REASONS if r in present] + sorted(present - set(REASONS))


def top_topics(comparison: pd.DataFrame, n: int = TOP_TOPICS) -> pd.DataFrame:
    """Per (broker, topic), summed over reasons, the `n` with the longest connection pause without
    notices (then with, then notices); `reasons` lists each reason with its notices."""
    c = comparison
    if c.empty:
        return pd.DataFrame(columns=["broker", "topic", "reasons", *_SUMS])
    sums = c.groupby(["broker", "topic"], sort=True)[list(_SUMS)].sum().reset_index()
    top = sums.sort_values(["connection_paused_ms_without_notices", "connection_paused_ms", "notices",
                            "broker", "topic"], ascending=[False, False, False, True, True]).head(n)
    # the reasons' labels, in the order of REASONS, only for the topics shown
    mine = c.merge(top[["broker", "topic"]], on=["broker", "topic"])
    order = mine["reason"].map(lambda r: REASONS.index(r) if r in REASONS else len(REASONS))
    labels = (mine["reason"].map(lambda r: REASON_LABELS.get(r, r)) + " ×"
              + mine["notices"].astype("int64").astype(str))
    reasons = (mine.assign(order=order, label=labels).sort_values(["order", "reason"])
               .groupby(["broker", "topic"], sort=False)["label"].agg(", ".join).rename("reasons"))
    return top.join(reasons, on=["broker", "topic"]).reset_index(drop=True)


def paused_figure(top: pd.DataFrame) -> Figure:
    """Connection pause per topic (top N), without notices against with notices."""
    fig = Figure(figsize=(10, max(2.5, 0.45 * len(top) + 1.2)))
    ax = fig.add_subplot(1, 1, 1)
    rows = top.iloc[::-1]
    labels = [f"{_short(t)} @ {b}" if b else _short(t)
              for b, t in zip(rows["broker"], rows["topic"], strict=True)]
    y = range(len(rows))
    height = 0.4
    ax.barh([i + height / 2 for i in y], rows["connection_paused_ms_without_notices"] / 1000, height,
            color="C7", label="without notices (today)")
    ax.barh([i - height / 2 for i in y], rows["connection_paused_ms"] / 1000, height, color="C0",
            label="with notices (PIP-385)")
    ax.set_yticks(list(y), labels, fontsize=8)
    ax.set_xlabel("connection paused (s)")
    ax.set_title("Connection pause caused by each topic's throttles, without and with notices")
    ax.grid(alpha=0.3, axis="x")
    plain_numbers(ax, "x")
    legend = legend_beside(ax, fontsize=8)
    # the topics' labels decide the left margin: the figure is drawn once, uncropped
    place_grid(fig, left=text_width_inches(labels, 8) + 0.2, right=0.15 + legend, top=0.4, bottom=0.6)
    return fig


def stalled_figure(comparison: pd.DataFrame) -> Figure:
    """Innocent topics stalled per reason, without notices against with notices."""
    fig = Figure(figsize=(10, 3.4))
    ax = fig.add_subplot(1, 1, 1)
    reasons = _reasons_in(comparison)
    sums = comparison.groupby("reason")[["stalled_topics", "stalled_topics_without_notices"]].sum()
    x = range(len(reasons))
    width = 0.38
    ax.bar([i - width / 2 for i in x], [sums.loc[r, "stalled_topics_without_notices"] for r in reasons],
           width, color="C7", label="without notices (today)")
    ax.bar([i + width / 2 for i in x], [sums.loc[r, "stalled_topics"] for r in reasons], width, color="C0",
           label="with notices (PIP-385)")
    ax.set_xticks(list(x), [REASON_LABELS.get(r, r) for r in reasons], fontsize=8)
    ax.set_ylabel("innocent topics stalled")
    ax.set_title("Topics stalled by another topic's throttle, per reason (sum over notices)")
    ax.grid(alpha=0.3, axis="y")
    plain_numbers(ax)
    legend = legend_beside(ax, fontsize=8)
    place_grid(fig, left=0.9, right=0.15 + legend, top=0.4, bottom=0.4)
    return fig


def timeline_figure(timeline: pd.DataFrame, bucket_ms: int) -> Figure:
    """Notices per bucket stacked by reason (top), connection pause per bucket with and without (bottom)."""
    fig = Figure(figsize=(10, 5.2))
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    # every bucket of the span (0 where no notice started), one more to close the last step
    first, last = int(timeline["bucket_start_ms"].min()), int(timeline["bucket_start_ms"].max())
    buckets = pd.RangeIndex(first, last + 2 * bucket_ms, bucket_ms)
    counts = timeline.pivot_table(index="bucket_start_ms", columns="reason", values="notices", aggfunc="sum",
                                  fill_value=0).reindex(buckets, fill_value=0)
    when = time_axis(counts.index)
    # each reason one filled step over the ones below it (a bar per bucket costs a patch each)
    base = pd.Series(0, index=counts.index)
    for reason in _reasons_in(timeline):
        above = base + counts[reason]
        top.fill_between(when, base, above, step="post", color=_color(reason), linewidth=0,
                         label=REASON_LABELS.get(reason, reason))
        base = above
    top.set_ylim(bottom=0)
    top.set_ylabel(f"notices per {_duration(bucket_ms)}")
    top.set_title("Throttle notices over time, by reason")
    top.grid(alpha=0.3)
    plain_numbers(top)
    legend = legend_beside(top, fontsize=7)
    columns = ["connection_paused_ms", "connection_paused_ms_without_notices"]
    paused = timeline.groupby("bucket_start_ms")[columns].sum().reindex(buckets, fill_value=0)
    at = time_axis(paused.index)
    bottom.step(at, paused["connection_paused_ms_without_notices"] / 1000, where="post", color="C7",
                label="without notices (today)")
    bottom.step(at, paused["connection_paused_ms"] / 1000, where="post", color="C0",
                label="with notices (PIP-385)")
    bottom.set_ylabel("connection paused (s)")
    bottom.grid(alpha=0.3)
    plain_numbers(bottom)
    legend = max(legend, legend_beside(bottom, fontsize=7))
    time_axis_style(bottom)
    top.tick_params(labelbottom=False)
    place_grid(fig, 2, 1, left=0.9, right=0.15 + legend, top=0.4, bottom=0.85, gap_h=0.15)
    return fig


def _duration(ms: int) -> str:
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1_000)):
        if ms % size == 0:
            return f"{ms // size} {unit}"
    return f"{ms} ms"


def build_sections(data: NoticeReportData) -> list[Section]:
    """The producer throttle notices section of `quotaplane run`'s report (docs/notices.md)."""
    s = Section("Producer throttle notices (PIP-385)")
    s.text("A breach of a publish limit starts a notice: the broker sends ThrottleProducer to a producer "
           "that supports it and, when the receipt comes within throttleProducerReceiptWaitTimeMillis, "
           "keeps reading the connection, so the producer's other topics go on. Without notices (today's "
           "behaviour) every breach pauses the whole connection. Connection-level breaches (broker rate, "
           "pending requests, publish buffer) pause the connection either way. The offered traffic is "
           "replayed as recorded, and pauses are measured against it.")
    s.kpis(data.kpis)
    for note in data.notes:
        s.note(note)
    c = data.comparison
    if c.empty:
        s.text("No producer breached a publish limit: no notice.")
        return [s]
    s.heading("By reason")
    per_reason = c.groupby("reason")[list(_SUMS)].sum()
    s.table(["reason", "notices", "in time", "late", "unsupported", "pause sent (pause_for_millis)",
             "connection paused with notices", "paused without", "topics stalled with notices",
             "stalled without"],
            [[f"{REASON_LABELS.get(r, r)} ({r})", *_sum_cells(per_reason.loc[r])] for r in _reasons_in(c)])
    s.figure(stalled_figure(c), "Innocent topics stalled, per reason, without and with notices")
    s.heading("Topics whose throttles paused connections the longest")
    top = top_topics(c)
    s.figure(paused_figure(top), f"Connection pause per topic (top {len(top)}), without and with notices")
    s.table(["broker", "topic", "reasons (notices)", "notices", "in time", "late", "unsupported",
             "pause sent (pause_for_millis)", "connection paused with notices", "paused without",
             "topics stalled with notices", "stalled without"],
            [[r["broker"], r["topic"], r["reasons"], *_sum_cells(r)] for _, r in top.iterrows()])
    if not data.timeline.empty:
        s.heading("Over time")
        s.figure(timeline_figure(data.timeline, data.bucket_ms),
                 f"Notices per {_duration(data.bucket_ms)} by reason, and the connection pause they caused "
                 "(counted in the bucket of the notice)")
    return [s]


def _sum_cells(row: Mapping[str, Any] | pd.Series) -> list[Any]:
    def seconds(column: str) -> Num:
        return Num(f"{float(row[column]) / 1000:,.1f} s")

    return [int(row["notices"]), int(row[IN_TIME]), int(row[LATE]), int(row[UNSUPPORTED]),
            seconds("pause_for_millis_total"), seconds("connection_paused_ms"),
            seconds("connection_paused_ms_without_notices"), int(row["stalled_topics"]),
            int(row["stalled_topics_without_notices"])]
