"""`place_grid`: a figure's margins and gaps fixed in inches, so it is saved uncropped; and the
helpers every plot of the report uses: plain numbers, dated time axes, legends beside the data."""

from __future__ import annotations

import base64
import re

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from quotaplane.core.report import (
    Section,
    figure_to_data_uri,
    legend_beside,
    place_grid,
    plain_numbers,
    text_width_inches,
    time_axis,
    time_axis_style,
)


def _inches(fig: Figure, rows: int, cols: int) -> list[tuple[float, float, float, float]]:
    """Each axes' (left, bottom, right, top) in inches from the figure's lower left corner."""
    axes = [fig.add_subplot(rows, cols, i + 1) for i in range(rows * cols)]
    place_grid(fig, rows, cols, left=0.7, right=0.1, top=0.3, bottom=0.8, gap_w=0.75, gap_h=0.45)
    width, height = fig.get_size_inches()
    boxes = []
    for ax in axes:
        box = ax.get_position()
        boxes.append((box.x0 * width, box.y0 * height, box.x1 * width, box.y1 * height))
    return boxes


def test_margins_and_gaps_are_the_inches_given() -> None:
    boxes = _inches(Figure(figsize=(10, 7.8)), 3, 2)
    first, second, last = boxes[0], boxes[1], boxes[-1]
    assert first[0] == pytest.approx(0.7) and first[3] == pytest.approx(7.8 - 0.3)
    assert second[2] == pytest.approx(10 - 0.1) and last[1] == pytest.approx(0.8)
    assert second[0] - first[2] == pytest.approx(0.75)  # between the columns
    assert first[1] - boxes[2][3] == pytest.approx(0.45)  # between the rows
    # the axes share the rest equally
    assert len({round(b[2] - b[0], 9) for b in boxes}) == 1
    assert len({round(b[3] - b[1], 9) for b in boxes}) == 1


def test_a_single_axes_fills_the_margins() -> None:
    (box,) = _inches(Figure(figsize=(10, 3.4)), 1, 1)
    assert box == pytest.approx((0.7, 0.8, 9.9, 3.1))


def _png_size(uri: str) -> tuple[int, int]:
    """The width and height in an embedded PNG's header (IHDR)."""
    png = base64.b64decode(uri.split(",", 1)[1])
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def test_an_uncropped_figure_keeps_its_size() -> None:
    fig = Figure(figsize=(10, 3.4))
    fig.add_subplot(1, 1, 1).set_title("t")
    assert _png_size(figure_to_data_uri(fig, dpi=100, crop=False)) == (1000, 340)


def test_a_section_keeps_a_placed_figure_whole_and_crops_any_other() -> None:
    placed, other = Figure(figsize=(10, 3.4)), Figure(figsize=(10, 3.4))
    placed.add_subplot(1, 1, 1)
    other.add_subplot(1, 1, 1)
    place_grid(placed, left=0.7, right=0.15, top=0.15, bottom=0.8)
    section = Section("t").figure(placed, "placed").figure(other, "other")
    sizes = [_png_size(part.split('src="', 1)[1].split('"', 1)[0]) for part in section.parts]
    assert sizes[0] == (1100, 374)  # the figure's own size at the report's 110 dpi
    assert sizes[1][0] < 1100 and sizes[1][1] < 374


def test_text_width_is_the_drawn_width() -> None:
    labels = ["b0", "persistent://acme/web/clicks @ pulsar-broker-2", "a topic"]
    fig = Figure(figsize=(10, 3))
    ax = fig.add_subplot(1, 1, 1)
    ax.set_yticks([0, 1, 2], labels, fontsize=8)
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    drawn = max(t.get_window_extent(renderer).width for t in ax.get_yticklabels()) / fig.dpi
    assert text_width_inches(labels, 8) == pytest.approx(drawn, rel=0.02)
    assert text_width_inches(labels, 16) == pytest.approx(2 * text_width_inches(labels, 8), rel=0.02)
    assert text_width_inches([], 8) == 0.0


def _drawn(fig: Figure) -> None:
    FigureCanvasAgg(fig).draw()


def test_large_values_are_plain_numbers_without_an_offset() -> None:
    fig = Figure(figsize=(6, 3))
    ax = fig.add_subplot(1, 1, 1)
    ax.plot([0, 1], [120_000, 190_000])
    twin = ax.twinx()
    twin.plot([0, 1], [1.2e8, 1.9e8])
    plain_numbers(ax)
    plain_numbers(twin)
    _drawn(fig)
    for axes, pattern in ((ax, r"\d{3},000"), (twin, r"\d{3} M")):
        assert axes.yaxis.get_offset_text().get_text() == ""
        labels = [t.get_text() for t in axes.get_yticklabels() if t.get_text()]
        assert labels and all(re.fullmatch(pattern, label) for label in labels), labels


def test_a_time_axis_has_the_year_the_zone_and_a_title() -> None:
    fig = Figure(figsize=(8, 3))
    ax = fig.add_subplot(1, 1, 1)
    ax.plot(time_axis([1_717_372_800_000, 1_717_545_600_000]), [1, 2])
    time_axis_style(ax)
    _drawn(fig)
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert labels and all(label.startswith("2024-06-0") and "\n" in label for label in labels)
    assert ax.get_xlabel() == "time (UTC)"


def test_the_legend_beside_covers_no_data() -> None:
    fig = Figure(figsize=(8, 3))
    ax = fig.add_subplot(1, 1, 1)
    for i in range(4):
        ax.plot([0, 1], [i, i + 1], label=f"a long series name {i}")
    width = legend_beside(ax, fontsize=8)
    place_grid(fig, left=0.7, right=0.15 + width, top=0.2, bottom=0.5)
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    legend, axes = ax.get_legend().get_window_extent(renderer), ax.get_window_extent(renderer)
    assert legend.x0 >= axes.x1  # beside the plot, not on it
    assert legend.x1 <= fig.get_size_inches()[0] * fig.dpi  # and inside the figure
