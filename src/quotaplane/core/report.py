"""A self-contained HTML report: sections of text, tables and embedded PNG plots.

Each policy builds its own `Section`s; `write_report` puts them into one file that opens in
any browser with no network (plots are base64 PNGs, the style is inline).
"""

from __future__ import annotations

import base64
import html
import io
import threading
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np

matplotlib.use("Agg")
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import text_to_path

_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;
color:#1d2330;line-height:1.45;padding:0 1rem}
h1{font-size:1.7rem;margin-bottom:.2rem}h2{border-bottom:2px solid #dde3ee;padding-bottom:.2rem;
margin-top:2.4rem}h3{margin-top:1.6rem}
table{border-collapse:collapse;margin:.8rem 0;font-size:.9rem}
th,td{border:1px solid #d5dbe6;padding:.25rem .6rem;text-align:left}th{background:#f0f3f8}
td.num{text-align:right;font-variant-numeric:tabular-nums}
figure{margin:1rem 0}figure img{max-width:100%;border:1px solid #e3e7ef}
figcaption{font-size:.85rem;color:#5a6475}
.meta{color:#5a6475;font-size:.9rem}.kpi{display:inline-block;margin:0 1.5rem .6rem 0}
.kpi b{display:block;font-size:1.3rem}.note{background:#fff7e0;border-left:4px solid #f0b429;
padding:.5rem .8rem}
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


#: `place_grid`'s margins (inches) for a titled plot over time: the y label and its ticks (up to six
#: digits; Matplotlib writes larger values with an offset) beside, the dates slanted below
TIME_SERIES_MARGINS = {"left": 0.85, "right": 0.15, "top": 0.4, "bottom": 0.75}

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


@dataclass
class Section:
    """A titled part of the report; `parts` are HTML fragments added in order."""

    title: str
    parts: list[str] = field(default_factory=list)

    def text(self, paragraph: str) -> Section:
        self.parts.append(f"<p>{html.escape(paragraph)}</p>")
        return self

    def note(self, paragraph: str) -> Section:
        self.parts.append(f'<p class="note">{html.escape(paragraph)}</p>')
        return self

    def heading(self, title: str) -> Section:
        self.parts.append(f"<h3>{html.escape(title)}</h3>")
        return self

    def kpis(self, items: Iterable[tuple[str, Any]]) -> Section:
        cells = "".join(f'<span class="kpi">{html.escape(label)}<b>{html.escape(str(value))}</b></span>'
                        for label, value in items)
        self.parts.append(f"<div>{cells}</div>")
        return self

    def table(self, header: Sequence[str], rows: Iterable[Sequence[Any]],
              empty: str = "None.") -> Section:
        body = []
        for row in rows:
            cells = []
            for value in row:
                cls = ' class="num"' if isinstance(value, int | float) and not isinstance(value, bool) else ""
                cells.append(f"<td{cls}>{html.escape(_fmt(value))}</td>")
            body.append("<tr>" + "".join(cells) + "</tr>")
        if not body:
            self.parts.append(f"<p><em>{html.escape(empty)}</em></p>")
            return self
        head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
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


def render_report(title: str, subtitle: str, sections: Sequence[Section]) -> str:
    """The whole report as one HTML document."""
    toc = "".join(f'<li><a href="#{_anchor(s.title)}">{html.escape(s.title)}</a></li>' for s in sections)
    body = "".join(s.render() for s in sections)
    return (
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p class=\"meta\">{html.escape(subtitle)}</p>"
        f"<nav><ol>{toc}</ol></nav>{body}</body></html>"
    )


def write_report(path: str | Path, title: str, subtitle: str, sections: Sequence[Section]) -> Path:
    """Write the report to `path` and return it."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_report(title, subtitle, sections), encoding="utf-8")
    return out
