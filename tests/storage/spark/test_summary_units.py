"""`summary.decision_groups`: what each unit (and each of its fallback reasons) amounts to, the
throttle factor over time and the first fallback events, aggregated by Spark per (unit, reason, time
bucket) and folded in the driver, must equal the decision rows themselves taken in round order."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from quotaplane.core.buckets import bucket_width
from quotaplane.storage.spark import summary as S
from quotaplane.storage.summary import iso

pytestmark = pytest.mark.spark
SCHEMA = ("cluster string, observing_broker_id long, ts_ms long, poll_id long, round_window long, "
          "source string, throttle_factor double, throttling_broker_id long, throttling_log_dir string, "
          "fallback_reason string, fallback_applied boolean, collection_error string, active_brokers long, "
          "active_log_dirs long, missing_brokers long, effective_produce_limit double, used_bytes long")

decision = st.fixed_dictionaries({
    "unit": st.sampled_from([("a", None), ("a", 1), (None, 2)]),
    "ts_ms": st.integers(0, 50),
    "marked": st.booleans(),  # a marked round has `poll_id`, an unmarked one `round_window`
    "throttle_factor": st.sampled_from([0.0, 0.25, 1.0]),
    "fallback_reason": st.sampled_from([None, None, "missing_broker_data", "SAFETY_TIMEOUT"]),
    "fallback_applied": st.booleans(),
    "collection_error": st.sampled_from([None, None, "SAFETY_TIMEOUT"]),
    "active_brokers": st.integers(0, 3),
})


def _rows(drawn: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Decision rows with one round per unit and time (as the decisions have)."""
    rows, seen = [], set()
    for i, d in enumerate(drawn):
        (cluster, broker), ts = d["unit"], d["ts_ms"]
        if (cluster, broker, ts) in seen:
            continue
        seen.add((cluster, broker, ts))
        rows.append({"cluster": cluster, "observing_broker_id": broker, "ts_ms": ts,
                     "poll_id": ts if d["marked"] else None, "round_window": None if d["marked"] else ts,
                     "source": "cluster", "throttle_factor": d["throttle_factor"], "throttling_broker_id": i,
                     "throttling_log_dir": None, "fallback_reason": d["fallback_reason"],
                     "fallback_applied": d["fallback_applied"] and d["fallback_reason"] is not None,
                     "collection_error": d["collection_error"], "active_brokers": d["active_brokers"],
                     "active_log_dirs": 2 * d["active_brokers"], "missing_brokers": i % 3,
                     "effective_produce_limit": None,
                     "used_bytes": None})
    return rows


def _expected(rows: list[dict[str, Any]]) -> tuple[dict[tuple, dict[str, Any]], dict[tuple, tuple[int, int]]]:
    units: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        units.setdefault((r["cluster"], r["observing_broker_id"]), []).append(r)
    out, counts = {}, {}
    for key, rs in units.items():
        rs.sort(key=lambda r: r["ts_ms"])
        spans = [b["ts_ms"] - a["ts_ms"] for a, b in itertools.pairwise(rs)] + [0]
        throttled = [r["ts_ms"] for r in rs if r["throttle_factor"] < 1.0]
        blocked = [r["ts_ms"] for r in rs if r["throttle_factor"] == 0.0]
        ok = [r for r in rs if r["collection_error"] is None]
        out[key] = {
            "decisions": len(rs), "first_ms": rs[0]["ts_ms"], "last_ms": rs[-1]["ts_ms"],
            "throttled_ms": sum(s for r, s in zip(rs, spans, strict=True) if r["throttle_factor"] < 1.0),
            "blocked_ms": sum(s for r, s in zip(rs, spans, strict=True) if r["throttle_factor"] == 0.0),
            "first_throttled_ms": min(throttled, default=None),
            "first_blocked_ms": min(blocked, default=None),
            "lowest_factor": min(r["throttle_factor"] for r in rs),
            "last": rs[-1]["throttling_broker_id"],
            "last_ok": (ok[-1]["active_brokers"], ok[-1]["active_log_dirs"]) if ok else None,
        }
        for r in rs:
            if r["fallback_reason"] is not None:
                applied, rounds = counts.get((*key, r["fallback_reason"]), (0, 0))
                counts[(*key, r["fallback_reason"])] = (applied + r["fallback_applied"], rounds + 1)
    return out, counts


def _expected_events(rows: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """The first `limit` decisions with a fallback applied, in time, cluster and broker order."""
    applied = sorted((r for r in rows if r["fallback_applied"]),
                     key=lambda r: (r["ts_ms"], r["cluster"] is not None, r["cluster"] or "",
                                    r["observing_broker_id"] is not None, r["observing_broker_id"] or 0))
    return [{"ts": iso(r["ts_ms"]), "cluster": r["cluster"], "observing_broker_id": r["observing_broker_id"],
             "reason": r["fallback_reason"], "throttle_factor": r["throttle_factor"],
             "missing_brokers": r["missing_brokers"]} for r in applied[:limit]]


def _drawn(ts: int, reason: str | None, error: str | None = None) -> dict[str, Any]:
    return {"unit": ("a", None), "ts_ms": ts, "marked": True, "throttle_factor": 0.5,
            "fallback_reason": reason, "fallback_applied": True, "collection_error": error,
            "active_brokers": ts}


def _expected_series(rows: list[dict[str, Any]], span: tuple[int, int], buckets: int
                     ) -> list[dict[str, Any]]:
    """Per cluster and bucket of `span`: the lowest factor and whether a fallback was applied."""
    width = bucket_width(*span, buckets)
    points: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        start = span[0] + (r["ts_ms"] - span[0]) // width * width
        p = points.setdefault((r["cluster"], start), {"cluster": r["cluster"], "ts_ms": start,
                                                      "factor": r["throttle_factor"], "fallback": False})
        p["factor"] = min(p["factor"], r["throttle_factor"])
        p["fallback"] = p["fallback"] or r["fallback_applied"]
    return [points[k] for k in sorted(points, key=lambda k: (k[0] is not None, k[0] or "", k[1]))]


# the unit's last round (4) and its last round without an error (3) lie in different reason groups,
# and the first round without an error (0) in a third: whatever order Spark returns the groups in,
# folding must compare their round orders
FOLDED = [_drawn(0, None), _drawn(1, "missing_broker_data"), _drawn(2, "SAFETY_TIMEOUT"),
          _drawn(3, "missing_broker_data"), _drawn(4, None, "SAFETY_TIMEOUT")]


@settings(parent=settings.get_profile("differential"))
@given(st.lists(decision, min_size=0, max_size=30), st.sampled_from([1, 2, 3]), st.sampled_from([1, 3, 50]))
@example(FOLDED, 2, 3)
def test_units_their_fallbacks_and_the_series_equal_the_rows_in_round_order(spark, drawn, buckets,
                                                                           limit) -> None:
    """A few plot buckets, so that a bucket holds several rounds of several units and reasons, and
    a few events, so that some groups hold more than the first."""
    rows = _rows(drawn)
    span = (min(r["ts_ms"] for r in rows), max(r["ts_ms"] for r in rows)) if rows else None
    units, counts, series, events = S.decision_groups(spark.createDataFrame(rows, SCHEMA), span, buckets,
                                                      limit)
    expected, expected_counts = _expected(rows)
    got = {}
    for u in units:
        ok = u["last_ok"]
        got[(u["cluster"], u["observing_broker_id"])] = {
            **{k: u[k] for k in ("decisions", "first_ms", "last_ms", "throttled_ms", "blocked_ms",
                                 "first_throttled_ms", "first_blocked_ms", "lowest_factor")},
            "last": u["last"]["throttling_broker_id"],
            "last_ok": (ok["active_brokers"], ok["active_log_dirs"]) if ok else None,
        }
    assert got == expected
    assert [(u["cluster"], u["observing_broker_id"]) for u in units] == sorted(
        expected, key=lambda k: (k[0] is not None, k[0] or "", k[1] is not None, k[1] or 0))
    assert {(c["cluster"], c["observing_broker_id"], c["fallback_reason"]): (c["applied"], c["rounds"])
            for c in counts} == expected_counts
    assert series == (_expected_series(rows, span, buckets) if span else [])
    assert events == _expected_events(rows, limit)


def _expected_periods(rows: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """Per unit, in round order, the runs of rounds below factor 1 with one cause (the fallback
    reason, else the throttling volume), each until the unit's next round after it."""
    units: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        units.setdefault((r["cluster"], r["observing_broker_id"]), []).append(r)
    out = []
    for unit in sorted(units, key=lambda k: (k[0] is not None, k[0] or "", k[1] is not None, k[1] or 0)):
        ordered = sorted(units[unit], key=lambda r: (r["ts_ms"], r["poll_id"] is not None, r["poll_id"] or 0,
                                                     r["round_window"] is not None, r["round_window"] or 0))
        periods: list[dict[str, Any]] = []
        previous = None
        for i, r in enumerate(ordered):
            volume = r["fallback_reason"] is None
            cause = (r["fallback_reason"], r["throttling_broker_id"] if volume else None,
                     r["throttling_log_dir"] if volume else None)
            throttled = r["throttle_factor"] < 1.0
            if throttled and previous != ("throttled", cause):
                periods.append({"cluster": unit[0], "observing_broker_id": unit[1], "start_ms": r["ts_ms"],
                                "rounds": 0, "lowest_factor": r["throttle_factor"], "reason": cause[0],
                                "broker_id": cause[1], "log_dir": cause[2]})
            if throttled:
                p = periods[-1]
                p["rounds"] += 1
                p["lowest_factor"] = min(p["lowest_factor"], r["throttle_factor"])
                p["end_ms"] = ordered[i + 1]["ts_ms"] if i + 1 < len(ordered) else None
            previous = ("throttled", cause) if throttled else None
        out += [{**p, "of": len(periods)} for p in periods[:limit]]
    return out


@settings(parent=settings.get_profile("differential"))
@given(st.lists(decision, min_size=0, max_size=30), st.sampled_from([1, 2, 50]))
def test_throttled_periods_are_the_runs_of_one_cause_in_round_order(spark, drawn, limit) -> None:
    """Two throttling volumes only, so that a volume's period spans several rounds."""
    rows = [{**r, "throttling_broker_id": r["throttling_broker_id"] % 2} for r in _rows(drawn)]
    got = S.throttled_periods(spark.createDataFrame(rows, SCHEMA), limit)
    assert got == _expected_periods(rows, limit)
