"""The summary's and report's data from the collected sharing-group rows (plain Python)."""

from __future__ import annotations

from quotaplane.clients.spark import report_data


def group(broker: int, user: str, quota_type: str = "produce", **values: object) -> dict[str, object]:
    row: dict[str, object] = {
        "config_id": 0, "broker_id": broker, "quota_type": quota_type, "user": user, "client_id": "",
        "requests": 10, "violated_requests": 1, "throttled_requests": 1, "throttle_time_total_ms": 5,
        "rate_max": 100.0, "quota_limit_min": 50.0, "utilisation_max_pct": 200.0, "standing": "over",
        "factor_min": None, "factor_intervals": 0, "throttled_under_factor": 0}
    return {**row, **values}


def test_picks_break_ties_by_key_like_spark_order_by() -> None:
    groups = sorted([group(2, "b"), group(1, "z"), group(1, "a", utilisation_max_pct=90.0, standing="near")],
                    key=report_data.group_key)
    picked = report_data.report_standing(groups, top=1)
    # furthest over (top 1): a tie at 200 %, the smaller key wins; nearest: the one near; the five
    # most throttled add the third (in the order first picked)
    assert [(r["broker_id"], r["user"]) for r in picked] == [(1, "z"), (1, "a"), (2, "b")]
    assert list(picked[0])[-1] == "config_id" and "factor_min" not in picked[0]


def test_totals_add_the_unrecorded_requests_and_keep_the_quota_type_order() -> None:
    groups = [group(1, "a", "fetch", factor_min=None), group(1, "a", factor_min=0.5),
              group(2, "a", factor_min=0.25)]
    totals = report_data.totals(groups, {"request": 7})
    assert list(totals["by_quota_type"]) == ["produce", "fetch", "request"]
    assert totals["by_quota_type"]["request"] == {"requests": 7, "recorded": 0, "violated": 0,
                                                  "throttled": 0, "throttle_time_total_ms": 0}
    assert (totals["requests"], totals["recorded_requests"], totals["throttled_requests"]) == (37, 30, 3)
    assert totals["throttle_factor_min"] == 0.25
