"""A plot over time takes its x values from `time_axis`: the same figure as a pandas series in UTC."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from quotaplane.core.report import figure_to_data_uri, time_axis

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def _figure(x: object, y: np.ndarray) -> str:
    fig = Figure(figsize=(4, 2))
    ax = fig.add_subplot(1, 1, 1)
    ax.step(x, y, where="post")
    fig.autofmt_xdate()
    return figure_to_data_uri(fig, crop=False)


def test_the_axis_is_the_milliseconds_as_utc_times() -> None:
    axis = time_axis(pd.Series([T0, T0 + 1, T0 + 86_400_000]))
    assert axis.dtype == np.dtype("datetime64[ms]")
    assert [str(t) for t in axis] == ["2026-01-01T00:00:00.000", "2026-01-01T00:00:00.001",
                                      "2026-01-02T00:00:00.000"]


def test_a_figure_over_time_is_drawn_as_from_a_zoned_series() -> None:
    ms = T0 + np.arange(0, 50) * 3_600_000
    y = np.arange(50) % 7
    assert _figure(time_axis(ms), y) == _figure(pd.to_datetime(pd.Series(ms), unit="ms", utc=True), y)
