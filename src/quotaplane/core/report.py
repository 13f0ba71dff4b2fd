"""A self-contained HTML report: sections of text, tables and embedded PNG plots.

Each policy builds its own `Section`s; `write_report` puts them into one file that opens in
any browser with no network (plots are base64 PNGs, the style is inline). A section may add lines to
the report's "Now" summary, which `render_report` puts first (`NowEntry`): who is throttled or over
a quota at the end of the telemetry and why, what is closest to its limits, and what runs out next.

The report is read at 1024 px wide and more (tests/core/test_report_browser.py renders it in
Chromium at 1024 and 1400 px and fails on anything wider than the page): tables wrap their text,
figures scale down. Values carry their units: sizes in binary units (`size_text`), times in UTC with
the year (`when_text`); a plot over time names its axis and zone (`time_axis_style`), writes plain
numbers (`plain_numbers`) and keeps its legend beside the data (`legend_beside`).
"""

from __future__ import annotations

import base64
import html
import io
import re
import threading
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np

matplotlib.use("Agg")
from matplotlib.axes import Axes
from matplotlib.dates import AutoDateLocator, DateFormatter
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import text_to_path
from matplotlib.ticker import FuncFormatter

from quotaplane.core.units import rate_text, size_text, when_text

__all__ = ["rate_text", "size_text", "when_text"]  # the report's units, for the policies' sections

_STYLE = """
*,*::before,*::after{box-sizing:border-box}
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;
color:#1d2330;line-height:1.45;padding:0 1rem}
h1{font-size:1.7rem;margin-bottom:.2rem}h2{border-bottom:2px solid #dde3ee;padding-bottom:.2rem;
margin-top:2.4rem}h3{margin-top:1.6rem}
table{border-collapse:collapse;margin:.8rem 0;font-size:.85rem;max-width:100%}
th,td{border:1px solid #d5dbe6;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f0f3f8;font-weight:600}td{overflow-wrap:break-word}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}th.num{text-align:right}
figure{margin:1rem 0}figure img{display:block;max-width:100%;height:auto;border:1px solid #e3e7ef}
figcaption{font-size:.85rem;color:#5a6475}
.meta{color:#5a6475;font-size:.9rem;overflow-wrap:anywhere}
.kpis{display:flex;flex-wrap:wrap;gap:.2rem 1.5rem;margin:.4rem 0 .8rem}
.kpi b{display:block;font-size:1.3rem}
.note,.info,.ok{border-left:4px solid;padding:.5rem .8rem;overflow-wrap:anywhere}
.note{background:#fff7e0;border-color:#f0b429}.info{background:#eef3fa;border-color:#7a99c2}
.ok{background:#ecf7ee;border-color:#4c9a5a}
#now{background:#f7f9fc;border:1px solid #dde3ee;padding:0 1rem 1rem}
"""

_DRAWING = threading.Lock()


def figure_to_data_uri(fig: Figure, dpi: int = 110, crop: bool = True) -> str:
    """A matplotlib figure as a `data:image/png;base64,...` URI; `crop` trims the margins to what
    is drawn (which draws the figure twice: once to measure it). One figure is drawn at a time:
    the stages of a small run build their reports side by side, and matplotlib's renderer shares
    caches (fonts, text layouts) between figures."""
    buf = io.BytesIO()
    with _DRAWING:
        fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight" if crop else None)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def time_axis(ms: Any) -> np.ndarray:
    """Epoch milliseconds as the x values of a plot over time: `datetime64` in UTC without a zone,
    which Matplotlib converts as one array (a pandas series with a zone it converts one `Timestamp`
    at a time: 0.1 s of the backlog's two figures at S 4x). Matplotlib's dates are in UTC unless
    set otherwise, so the figure is the same."""
    return np.asarray(ms, dtype=np.int64).astype("datetime64[ms]")


#: `place_grid`'s margins (inches) for a titled plot over time: the y label and its ticks (plain
#: numbers of at most seven characters, `plain_numbers`) beside, the dates on two lines and the
#: axis title below (`time_axis_style`)
TIME_SERIES_MARGINS = {"left": 1.05, "right": 0.15, "top": 0.4, "bottom": 0.85}


def time_axis_style(ax: Axes, title: bool = True) -> None:
    """Dates on a time axis as `2024-06-03` over `12:00`, in UTC, and the axis titled `time (UTC)`
    (`title` False: below the lowest of axes sharing it only)."""
    ax.xaxis.set_major_locator(AutoDateLocator(minticks=3, maxticks=8, tz=UTC))
    ax.xaxis.set_major_formatter(DateFormatter("%Y-%m-%d\n%H:%M", tz=UTC))
    ax.tick_params(axis="x", labelsize=8)
    if title:
        ax.set_xlabel("time (UTC)", fontsize=9)


def _plain(value: float, _position: object = None) -> str:
    """`0`, `0.25`, `12,500`; from a million on `1.5 M`, `2 G` (a suffix, not an offset written
    apart from the ticks): at most seven characters beside the axis."""
    if value == 0:
        return "0"
    for size, suffix in ((1e9, "G"), (1e6, "M")):
        if abs(value) >= size:
            return f"{value / size:,.3g} {suffix}"
    if abs(value) >= 100 or float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:,.3g}"


def plain_numbers(ax: Axes, axis: str = "y") -> None:
    """Tick labels as plain numbers with thousands separators: no offset or scientific notation
    (`1e6` above the axis), which a reader misses."""
    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_formatter(FuncFormatter(_plain))


def legend_beside(ax: Axes, fontsize: float = 8, handles: Sequence[Any] | None = None,
                  labels: Sequence[str] | None = None) -> float:
    """The axes' legend to the right of the plot, so that it covers no data; returns the width it
    takes in inches, to add to the figure's right margin (`place_grid`)."""
    if handles is None or labels is None:
        handles, labels = ax.get_legend_handles_labels()
    if not labels:
        return 0.0
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
              fontsize=fontsize, frameon=False)
    return text_width_inches(labels, fontsize) + 0.55


#: the figures `place_grid` laid out: `Section.figure` saves them uncropped
_PLACED: weakref.WeakSet[Figure] = weakref.WeakSet()


def place_grid(fig: Figure, rows: int = 1, cols: int = 1, *, left: float, right: float, top: float,
               bottom: float, gap_w: float = 0.0, gap_h: float = 0.0) -> None:
    """Lay out a figure's grid of `rows` x `cols` axes with margins and gaps fixed in inches, so that
    `Section.figure` saves it uncropped and draws it once: the margins must hold the tick labels,
    axis labels and titles."""
    _PLACED.add(fig)
    width, height = fig.get_size_inches()
    tall, wide = height - top - bottom, width - left - right
    fig.subplots_adjust(left=left / width, right=1 - right / width, top=1 - top / height,
                        bottom=bottom / height,
                        hspace=gap_h * rows / (tall - gap_h * (rows - 1)) if rows > 1 else 0.0,
                        wspace=gap_w * cols / (wide - gap_w * (cols - 1)) if cols > 1 else 0.0)


def text_width_inches(texts: Iterable[str], fontsize: float) -> float:
    """The widest of `texts` in the default font at `fontsize` points, in inches, measured from the
    font's metrics without drawing: the margin `place_grid` needs for labels set beside an axis."""
    prop = FontProperties(size=fontsize)
    points = max((text_to_path.get_text_width_height_descent(t, prop, ismath=False)[0] for t in texts),
                 default=0.0)
    return points / 72


_NUM = ' class="num"'


class Num(str):
    """Text of a number with its unit (`1.26 GiB`, `35 %`): a table cell aligned as a number."""


@dataclass(frozen=True)
class NowEntry:
    """A line of the report's "Now" summary (`render_report`).

    `group`: `throttled` (throttled or over a quota at the end of the telemetry), `closest` (closest
    to its limits) or `next` (what runs out next); `what` names it, `detail` says why or how close,
    `since` when it started (throttled) or when it runs out (next); entries of a group are listed by
    `rank`, smallest first."""

    group: str
    what: str
    detail: str
    since: str = ""
    rank: float = 0.0


NOW_GROUPS = {
    "throttled": ("Throttled or over a quota at the end of the telemetry", ["who", "why", "since"],
                  "Nothing is throttled or over a quota at the end of the telemetry."),
    "closest": ("Closest to their limits", ["what", "where it stands"],
                "No volume or backlog with a limit was observed."),
    "next": ("What runs out next", ["what", "limit", "when"],
             "Nothing reaches a limit within the forecast horizon."),
}
NOW_ROWS = 6  # per group


@dataclass
class Section:
    """A titled part of the report; `parts` are HTML fragments added in order, `now` the lines it
    adds to the report's "Now" summary."""

    title: str
    parts: list[str] = field(default_factory=list)
    now: list[NowEntry] = field(default_factory=list)

    def text(self, paragraph: str) -> Section:
        self.parts.append(f"<p>{html.escape(paragraph)}</p>")
        return self

    def note(self, paragraph: str) -> Section:
        """A warning: something is throttled, failed or was left out."""
        self.parts.append(f'<p class="note">{html.escape(paragraph)}</p>')
        return self

    def info(self, paragraph: str, ok: bool = False) -> Section:
        """A remark that is no warning (`ok`: a good outcome, such as never throttled)."""
        self.parts.append(f'<p class="{"ok" if ok else "info"}">{html.escape(paragraph)}</p>')
        return self

    def heading(self, title: str) -> Section:
        self.parts.append(f"<h3>{html.escape(title)}</h3>")
        return self

    def kpis(self, items: Iterable[tuple[str, Any]]) -> Section:
        cells = "".join(f'<span class="kpi">{html.escape(label)}<b>{html.escape(_fmt(value))}</b></span>'
                        for label, value in items)
        self.parts.append(f'<div class="kpis">{cells}</div>')
        return self

    def table(self, header: Sequence[str], rows: Iterable[Sequence[Any]],
              empty: str = "None.") -> Section:
        body = []
        numeric = [True] * len(header)
        for row in rows:
            cells = []
            for i, value in enumerate(row):
                num = isinstance(value, int | float | Num) and not isinstance(value, bool)
                if value is not None and not num and i < len(numeric):
                    numeric[i] = False
                text = html.escape(_fmt(value))
                cells.append(f"<td{_NUM if num else ''}>{text if num else _breakable(text)}</td>")
            body.append("<tr>" + "".join(cells) + "</tr>")
        if not body:
            self.parts.append(f"<p><em>{html.escape(empty)}</em></p>")
            return self
        head = "".join(f"<th{_NUM if num else ''}>{_breakable(html.escape(h))}</th>"
                       for h, num in zip(header, numeric, strict=False))
        self.parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")
        return self

    def figure(self, fig: Figure, caption: str) -> Section:
        """The figure as an embedded PNG, cropped to what is drawn; a figure laid out by
        `place_grid` keeps its own margins and is drawn once."""
        uri = figure_to_data_uri(fig, crop=fig not in _PLACED)
        alt = html.escape(caption, quote=True)
        self.parts.append(f'<figure><img src="{uri}" alt="{alt}"><figcaption>{html.escape(caption)}'
                          "</figcaption></figure>")
        import matplotlib.pyplot as plt

        plt.close(fig)
        return self

    def render(self) -> str:
        anchor = _anchor(self.title)
        return f'<section id="{anchor}"><h2>{html.escape(self.title)}</h2>{"".join(self.parts)}</section>'


_BREAK = re.compile(r"(?<=[/_])(?=[^/_\s])|(?<=[A-Za-z]\.)(?=[A-Za-z])|(?<=[a-z])(?=[A-Z][a-z])")


def _breakable(text: str) -> str:
    """Escaped text with a line break allowed after each `/`, `_` and `.` between letters and inside
    CamelCase: a long topic name, path or reason wraps at its parts, and a narrow column still fits
    its words whole."""
    return _BREAK.sub("<wbr>", text)


def _anchor(title: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in title.lower()).strip("-")


def _fmt(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def now_section(sections: Sequence[Section]) -> Section:
    """The "Now" summary: the sections' `now` entries by group (`NOW_GROUPS`), the first `NOW_ROWS`
    of each by rank."""
    now = Section("Now")
    entries = [e for s in sections for e in s.now]
    for group, (title, header, empty) in NOW_GROUPS.items():
        mine = sorted((e for e in entries if e.group == group), key=lambda e: e.rank)
        now.heading(title)
        if not mine:
            now.info(empty, ok=group == "throttled")
            continue
        now.table(header, [(e.what, e.detail, e.since or "—")[:len(header)] for e in mine[:NOW_ROWS]])
        if len(mine) > NOW_ROWS:
            now.text(f"{len(mine) - NOW_ROWS} more in the sections below.")
    return now


def render_report(title: str, subtitle: str, sections: Sequence[Section]) -> str:
    """The whole report as one HTML document, the "Now" summary first."""
    now = now_section(sections)
    toc = "".join(f'<li><a href="#{_anchor(s.title)}">{html.escape(s.title)}</a></li>' for s in sections)
    body = (now.render() + f"<nav><h2>Sections</h2><ol>{toc}</ol></nav>"
            + "".join(s.render() for s in sections))
    return (
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p class=\"meta\">{html.escape(subtitle)}</p>"
        f"{body}</body></html>"
    )


def write_report(path: str | Path, title: str, subtitle: str, sections: Sequence[Section]) -> Path:
    """Write the report to `path` and return it."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_report(title, subtitle, sections), encoding="utf-8")
    return out
