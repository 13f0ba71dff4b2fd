"""Rounds from telemetry rows, and whole histories."""

from __future__ import annotations

from typing import Any

from quotaplane.storage.engine import MISSING_BROKER_DATA, Volume, evaluate_rounds, group_rounds
from tests.storage.engine.helpers import cluster_config, local_config, strimzi_config


def vol(ts: int, broker: int, available: int, log_dir: str = "/a", total: int = 1000, cluster: str = "c",
        poll: int | None = None) -> dict[str, Any]:
    return {"ts": ts, "cluster": cluster, "broker_id": broker, "log_dir": log_dir, "total_bytes": total,
            "available_bytes": available, "poll_id": poll}


def member(ts: int, broker: int, cluster: str = "c", poll: int | None = None) -> dict[str, Any]:
    return {"ts": ts, "cluster": cluster, "broker_id": broker, "poll_id": poll}


def error(ts: int, reason: str, cluster: str | None = "c", poll: int | None = None) -> dict[str, Any]:
    return {"ts": ts, "reason": reason, "cluster": cluster, "poll_id": poll}


def test_unmarked_rows_group_by_check_interval_window_and_time_is_the_max() -> None:
    rounds = group_rounds([vol(0, 1, 5), vol(59_999, 2, 5), vol(60_000, 1, 5)], [], [], 60_000)
    assert [(r.window, r.ts, len(r.volumes)) for r in rounds] == [(0, 59_999, 2), (1, 60_000, 1)]


def test_interval_zero_makes_each_timestamp_a_round() -> None:
    rounds = group_rounds([vol(5, 1, 5), vol(5, 2, 5), vol(6, 1, 5)], [], [], 0)
    assert [(r.window, r.ts) for r in rounds] == [(5, 5), (6, 6)]


def test_negative_timestamps_floor() -> None:
    assert [r.window for r in group_rounds([vol(-1, 1, 5)], [], [], 1000)] == [-1]


def test_poll_id_marks_rounds_across_windows_and_orders_before_unmarked_at_equal_time() -> None:
    rounds = group_rounds([vol(10, 1, 5, poll=7), vol(70_000, 2, 5, poll=7), vol(70_000, 3, 5)], [], [],
                          60_000)
    assert [(r.poll_id, r.window, r.ts) for r in rounds] == [(7, None, 70_000), (None, 1, 70_000)]


def test_duplicate_observation_keeps_latest_then_fewest_available_then_fewest_total() -> None:
    (rd,) = group_rounds([vol(1, 1, 500), vol(2, 1, 600), vol(2, 1, 400, total=900), vol(2, 1, 400)], [], [],
                         60_000)
    assert rd.volumes == (Volume(1, "/a", 900, 400),)


def test_membership_defines_the_active_set_or_else_the_observed_brokers() -> None:
    rounds = group_rounds([vol(0, 1, 5), vol(0, 2, 5), vol(60_000, 1, 5)], [member(1, 1), member(2, 3)], [],
                          60_000)
    assert rounds[0].active == {1, 3} and rounds[1].active == {1}


def test_earliest_error_is_the_reason_and_unnamed_cluster_errors_apply_to_all() -> None:
    rounds = group_rounds([vol(0, 1, 5, cluster="a"), vol(0, 1, 5, cluster="b")], [],
                          [error(5, "Z", "a"), error(3, "Y", "a"), error(7, "ALL", None)], 60_000)
    assert {(r.cluster, r.error) for r in rounds} == {("a", "Y"), ("b", "ALL")}
    assert all(r.ts == 7 for r in rounds)


def test_errors_without_any_cluster_form_their_own_rounds() -> None:
    (rd,) = group_rounds([], [], [error(5, "X", None)], 1000)
    assert (rd.cluster, rd.error, rd.active) == (None, "X", frozenset())


def test_cluster_history_rows() -> None:
    cfg = cluster_config(None, ("availableBytesBelow", "100"), fallback="0.5", produce="1000")
    rows = evaluate_rounds(cfg, group_rounds(
        [vol(0, 1, 50), vol(0, 2, 900), vol(60_000, 1, 900)], [member(60_000, 1), member(60_000, 2)],
        [error(125_000, "DESCRIBE_CLUSTER_ERROR")], 60_000))
    assert [(r["ts_ms"], r["throttle_factor"], r["throttling_broker_id"], r["fallback_reason"],
             r["effective_produce_limit"]) for r in rows] == [
        (0, 0.0, 1, None, 1.0),
        (60_000, 0.5, None, MISSING_BROKER_DATA, 500.0),
        (125_000, 0.5, None, "DESCRIBE_CLUSTER_ERROR", 500.0),
    ]
    assert rows[0]["source"] == "cluster" and rows[0]["observing_broker_id"] is None


def test_local_history_has_a_row_per_active_broker() -> None:
    rows = evaluate_rounds(local_config(100, 200), group_rounds(
        [vol(0, 1, 850), vol(0, 2, 990)], [member(0, 1), member(0, 2), member(0, 3)], [], 1000))
    assert [(r["observing_broker_id"], r["throttle_factor"], r["used_bytes"], r["fallback_reason"])
            for r in rows] == [(1, 0.5, 150, None), (2, 1.0, 10, None), (3, 1.0, None, MISSING_BROKER_DATA)]


def test_strimzi_history_counts_the_fallback_once_and_carries_the_factor() -> None:
    cfg = strimzi_config(validity="PT2M", fallback="0.0")
    rows = evaluate_rounds(cfg, group_rounds(
        [vol(0, 1, 50)], [], [error(60_000, "A"), error(120_000, "B"), error(180_000, "C"),
                              error(240_000, "D")], 60_000))
    assert [(r["throttle_factor"], r["throttling_broker_id"], r["fallback_reason"], r["fallback_applied"])
            for r in rows] == [(0.0, 1, None, False), (0.0, 1, None, False), (0.0, 1, None, False),
                               (0.0, None, "C", True), (0.0, None, "C", False)]
