"""The report's series of the plotted topics: at most `PLOT_POINTS` points per topic on any span."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from quotaplane.topics.report import dropped_figure
from quotaplane.topics.spark.report_data import PLOT_POINTS, SERIES_COLUMNS, collect_report_data, point_ms

MINUTE = 60_000


def test_a_point_is_one_interval_until_the_span_needs_more_than_plot_points() -> None:
    first = 7 * MINUTE + 5
    last_of = first - first % MINUTE + (PLOT_POINTS - 1) * MINUTE  # the PLOT_POINTS-th interval
    assert point_ms(MINUTE, first, last_of + MINUTE - 1) == MINUTE
    assert point_ms(MINUTE, first, last_of + MINUTE) == 2 * MINUTE  # one interval more
    assert point_ms(MINUTE, first, first) == MINUTE
    assert point_ms(MINUTE, 0, PLOT_POINTS * 3 * MINUTE - 1) == 3 * MINUTE


def _totals(rows: list[tuple[int, str, int]]) -> pd.DataFrame:
    return pd.DataFrame([{"broker_id": b, "topic": t, "first_throttled_ms": 0, "last_throttled_ms": 0,
                          "throttled_requests": 1, "throttled_bytes": n, "accepted_bytes": 0,
                          "max_topic_rate": 1.0, "min_topic_threshold": 1, "max_topic_threshold": 1,
                          "threshold_source": "default", "error_requests": 0, "error_bytes": 0,
                          "max_bytes": 0} for b, t, n in rows])


@pytest.mark.spark
def test_the_series_folds_intervals_into_points_keeping_peaks_and_sums(spark) -> None:
    n = 2 * PLOT_POINTS + 1  # three intervals a point
    rows = [(i * MINUTE, 1, "a", float(i), 100 + i % 3, i, 1) for i in range(n)]
    intervals = spark.createDataFrame(rows, "interval_start_ms long, broker_id long, topic string, "
                                            "max_topic_rate double, max_topic_threshold long, "
                                            "throttled_bytes long, accepted_bytes long")
    totals = _totals([(1, "a", sum(r[5] for r in rows))])
    data = collect_report_data(totals, intervals, MINUTE, [], [], [], span=(0, (n - 1) * MINUTE + 5))
    series = data.series
    assert data.interval_ms == 3 * MINUTE and list(series.columns) == list(SERIES_COLUMNS)
    assert len(series) == -(-n // 3) <= PLOT_POINTS + 1  # the last point holds one interval
    assert series["throttled_bytes"].sum() == sum(r[5] for r in rows)
    assert series["accepted_bytes"].tolist()[:2] == [3, 3] and series["accepted_bytes"].iloc[-1] == 1
    assert series["max_topic_rate"].iloc[0] == 2.0 and series["max_topic_threshold"].iloc[0] == 102
    assert series["interval_start_ms"].tolist()[:2] == [0, 3 * MINUTE]
    unfolded = collect_report_data(totals, intervals.where(f"interval_start_ms < {10 * MINUTE}"), MINUTE,
                                   [], [], [], span=(0, 9 * MINUTE))
    assert unfolded.interval_ms == MINUTE and len(unfolded.series) == 10


def test_the_dropped_bytes_figure_draws_one_outline_per_topic_over_gaps() -> None:
    series = pd.DataFrame({"interval_start_ms": [0, MINUTE, 5 * MINUTE, 0], "broker_id": [1, 1, 1, 2],
                           "topic": ["a", "a", "a", "b"], "max_topic_rate": [1.0] * 4,
                           "max_topic_threshold": [1] * 4, "throttled_bytes": [5, 7, 9, 1],
                           "accepted_bytes": [0] * 4})
    figure = dropped_figure(series, MINUTE)
    ax = figure.axes[0]
    assert len(ax.collections) == 2  # one filled step per topic, not a bar per point
    # drawn in MiB
    lower, upper = (np.rint(c.get_paths()[0].vertices[:, 1] * 2**20) for c in ax.collections)
    assert lower.max() == 9 and upper.max() == 9  # b (1 at 0) stacks on a: 5 + 1 < 9 at 5 min
    assert 6 in upper  # a at 0 with b on top
    figure.savefig(io.BytesIO(), format="png")
