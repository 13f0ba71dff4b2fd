"""Figures laid out by `place_grid` are saved uncropped: everything they draw must lie inside them.

Each policy's placed figure is built here from inputs at the edges of what its margins hold: values
of six digits (from a million on `plain_numbers` writes `1.5 M`), a time axis over days, long labels.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import quotaplane.core.report as report
from quotaplane.backlog.report import age_figure, evictions_figure
from quotaplane.clients.report import storage_section, throttle_section
from quotaplane.forecast.report import _cone
from quotaplane.topics.report import dropped_figure, rate_figure

T0 = 1_717_372_800_000
HOUR = 3_600_000
TIMES = [T0 + k * 6 * HOUR for k in range(30)]  # a week


def assert_drawn_within(fig: Figure) -> None:
    assert fig in report._PLACED, "not laid out by place_grid: it would be cropped"
    box = fig.get_tightbbox(FigureCanvasAgg(fig).get_renderer())  # inches
    width, height = fig.get_size_inches()
    assert (box.x0 >= 0, box.y0 >= 0, box.x1 <= width, box.y1 <= height) == (True,) * 4, (box, width, height)


def backlog_age() -> Figure:
    topics = [f"persistent://tenant-with-a-long-name/namespace/topic-{i}" for i in range(3)]
    return age_figure(pd.DataFrame([{"topic": t, "ts_ms": ts, "age": 999_999.0 * k / 30,
                                     "time_limit": 600_000.0} for t in topics for k, ts in enumerate(TIMES)]))


def backlog_evictions() -> Figure:
    return evictions_figure(pd.DataFrame({"ts_ms": TIMES, "size_runs": [33_333] * 30, "time_runs": [1] * 30}))


def _topic_series(column: str, value: float) -> pd.DataFrame:
    return pd.DataFrame([{"broker_id": b, "topic": f"a-rather-long-topic-name.{b}", "interval_start_ms": ts,
                          column: value * (k + 1), "max_topic_threshold": 500_000}
                         for b in range(3) for k, ts in enumerate(TIMES)])


def topics_rate() -> Figure:
    return rate_figure(_topic_series("max_topic_rate", 33_333.0), 60_000)


def topics_dropped() -> Figure:
    return dropped_figure(_topic_series("throttled_bytes", 7.5e9), 60_000)


def forecast_cone() -> Figure:
    row = {"at_ms": TIMES[-1], "growth_bytes_per_second": 5e6, "recent_growth_bytes_per_second": 8e6,
           "seconds_to_full": 200_000.0, "available_bytes": 9_000 * 2**30, "broker_id": 1_000_001,
           "log_dir": "/var/lib/kafka/a-long-log-dir-name-0", "soft_threshold_bytes": 2_000 * 2**30,
           "hard_threshold_bytes": 500 * 2**30}
    return _cone(row, [(ts, 9_999 * 2**30) for ts in TIMES], 7 * 86_400.0)


def _group(broker: int, user: str) -> dict[str, Any]:
    return {"broker_id": broker, "quota_type": "produce", "user": user, "client_id": "client-" * 4}


def _captured(build: Callable[[], Any], monkeypatch: pytest.MonkeyPatch) -> list[Figure]:
    figures: list[Figure] = []

    def capture(fig: Figure, dpi: int = 110, crop: bool = True) -> str:
        assert not crop, "a placed figure is saved uncropped"
        figures.append(fig)
        return "data:image/png;base64,"

    monkeypatch.setattr(report, "figure_to_data_uri", capture)
    build()
    assert figures
    return figures


def clients_throttle(monkeypatch: pytest.MonkeyPatch) -> list[Figure]:
    standing = [{**_group(b, f"user-{b}"), "throttle_time_total_ms": 999_999_000, "throttled_requests": 9,
                 "utilisation_max_pct": 999.0} for b in range(5)]
    intervals = [{**_group(b, f"user-{b}"), "interval_start_ms": ts, "throttle_time_total_ms": 999_999_000}
                 for b in range(5) for ts in TIMES]
    return _captured(lambda: throttle_section(standing, intervals), monkeypatch)


def clients_storage(monkeypatch: pytest.MonkeyPatch) -> list[Figure]:
    decisions = [{"ts_ms": ts, "throttle_factor": 0.5, "observing_broker_id": b}
                 for b in range(3) for ts in TIMES]
    intervals = [{**_group(b, f"user-{b}"), "interval_start_ms": ts, "quota_limit_min": 1.0 + 10**b * 333_333}
                 for b in range(5) for ts in TIMES]
    return _captured(lambda: storage_section(decisions, intervals, [], 1e9), monkeypatch)


@pytest.mark.parametrize("build", [backlog_age, backlog_evictions, topics_rate, topics_dropped,
                                   forecast_cone])
def test_a_placed_figure_draws_nothing_outside_itself(build: Callable[[], Figure]) -> None:
    assert_drawn_within(build())


@pytest.mark.parametrize("build", [clients_throttle, clients_storage])
def test_a_clients_figure_draws_nothing_outside_itself(build: Callable[..., list[Figure]],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    for fig in build(monkeypatch):
        assert_drawn_within(fig)
