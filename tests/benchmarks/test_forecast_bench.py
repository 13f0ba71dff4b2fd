"""The forecast accuracy benchmark's scoring, on hand-made cases (never its results)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks.forecast import Series, lead_times, predict_linear_seconds, score, update_docs

H = 3600.0


def case(at_h: float, truth_h: float | None, ours_h: float | None, remaining_h: float = 48.0) -> dict:
    def seconds(hours: float | None) -> float | None:
        return None if hours is None else hours * H

    return {"at": int(at_h * 3_600_000), "volume": ("c", 1, "/d"), "truth": seconds(truth_h),
            "remaining": remaining_h * H, "quotaplane": seconds(ours_h), "predict_linear": None}


def test_predict_linear_is_the_least_squares_line_at_the_forecast_time() -> None:
    ts = np.arange(0, 7 * 3_600_000, 600_000, dtype=np.int64)
    s = Series(ts, 1000.0 - ts / 3_600_000 * 10.0, np.full(len(ts), 500.0), np.array([], dtype=np.int64))
    at = int(ts[-1])
    # 10 bytes an hour down from the line's value at `at`; 6 h window
    expected = (s.available[-1] - 500.0) / 10.0 * H
    assert predict_linear_seconds(s, at, 6 * 3_600_000, 500.0, 30 * 86_400.0) == pytest.approx(expected)
    assert predict_linear_seconds(s, at, 6 * 3_600_000, 500.0, 3600.0) is None  # beyond the horizon
    assert predict_linear_seconds(s, at, 6 * 3_600_000, 2000.0, 1e9) == 0.0  # already below


def test_score_counts_errors_misses_alerts_and_false_alerts() -> None:
    cases = [case(0, 10, 12), case(1, 9, None), case(2, None, 20), case(3, 30, 40), case(4, None, 30)]
    r = score(cases, "quotaplane", 7 * 86_400.0)
    assert r["errors"] == 2 and r["missed"] == 1
    assert r["error_median"] == pytest.approx((0.2 + 1 / 3) / 2)
    assert r["alerts"] == 2 and r["false_alerts"] == 1 and r["false_alert_rate"] == 0.5


def test_an_alert_is_judged_only_when_the_data_reaches_24_hours_past_it() -> None:
    r = score([case(0, None, 5, remaining_h=10)], "quotaplane", 7 * 86_400.0)
    assert r["alerts"] == 0


def test_lead_time_is_from_the_first_alert_of_the_run_reaching_the_crossing() -> None:
    cases = [case(0, 30, 40), case(10, 20, 18), case(20, 10, None), case(25, 5, 6), case(28, 2, 3)]
    assert lead_times(cases, "quotaplane") == [5 * H]


def test_the_docs_table_is_replaced_between_its_markers(tmp_path: Path) -> None:
    doc = tmp_path / "forecast.md"
    doc.write_text("intro\n<!-- forecast-benchmark:begin -->\nold\n<!-- forecast-benchmark:end -->\nend\n")
    scores = {"error_median": 0.1, "error_p90": 0.2, "missed": 0, "alerts": 1, "false_alerts": 0,
              "false_alert_rate": 0.0, "crossings_alerted": 1, "lead_hours_median": 3.0}
    result = {"date": "2026-11-23", "command": "python -m benchmarks.forecast", "machine": {"cores": 2},
              "every_minutes": 30, "window_hours": 6.0, "horizon_days": 7.0,
              "scenarios": [{"scenario": "linear-fill", "volumes_crossing": 1, "quotaplane": scores,
                             "predict_linear": scores}]}
    update_docs(result, doc)
    text = doc.read_text()
    assert "old" not in text and text.startswith("intro\n") and text.endswith("end\n")
    assert "| linear-fill | quotaplane | 0.10 | 0.20 |" in text
