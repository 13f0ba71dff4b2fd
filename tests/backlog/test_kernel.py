"""The numpy kernel of the Spark stage (`quotaplane.backlog.engine.kernel`) on what the generated
fleets of the differential test never hold: rows the reader's row rules quarantined, the group
rules (a subscription twice at a tick, a tick that disagrees on `partitioned_topic`), topics whose
every row is quarantined, and every boundary of the time and size rules, each against the
reference engine."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from quotaplane.backlog.config import parse_backlog_policies
from quotaplane.backlog.engine.evaluate import evaluate
from quotaplane.backlog.engine.kernel import CODED, INPUT, decide
from quotaplane.backlog.engine.model import Snapshot

A, B, C = "persistent://t/ns/a", "persistent://t/ns/b", "persistent://t/ns/c"
POLICIES = parse_backlog_policies({
    "broker": {"backlogQuotaDefaultRetentionPolicy": "consumer_backlog_eviction"},
    "namespaces": {"t/ns": {"destination_storage": {"limitSize": 100}}}})


def _row(ts: int, topic: str | None, subscription: str, size: int = 0, reason: str | None = None,
         parent: str | None = None) -> dict[str, Any]:
    return {"ts_ms": ts, "topic": topic, "subscription": subscription, "backlog_size_bytes": size,
            "backlog_entries": 10 if size else 0, "oldest_unacked_publish_ts_ms": 1 if size else None,
            "oldest_unacked_ledger_close_ts_ms": None, "partitioned_topic": parent, "_reason": reason}


_SCHEMA = pa.schema([(n, pa.string() if n in ("topic", "subscription", "partitioned_topic", "_reason")
                      else pa.int64()) for n in INPUT])


def _decide(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return decide(pa.Table.from_pylist(rows, _SCHEMA), POLICIES).to_pylist()


def test_quarantined_rows_are_counted_and_take_no_part() -> None:
    rows = [
        _row(1_000, A, "s", 500), _row(1_000, A, "t", 5_000, reason="a row rule"),  # t: row rule
        _row(2_000, A, "s", 50), _row(2_000, A, "s", 60),  # s twice: the tick has no used row
        _row(3_000, B, "s", 500, parent=A), _row(3_000, B, "t", 1, parent=None),  # parents disagree
        _row(3_000, C, "s", 1, reason="a row rule"), _row(4_000, None, "s", reason="topic is missing"),
    ]
    out = _decide(rows)
    checks = [(r["ts_ms"], r["topic"], r["oldest_subscription"], CODED["exceeded"][r["exceeded"]])
              for r in out if r["_rank1"]]
    assert checks == [(1_000, A, "s", "size")]
    evicted = [(r["topic"], CODED["_ev_type"][r["_ev_type"]], r["_ev_subscription"], r["_ev_bytes"])
               for r in out if r["_ev_type"] is not None]
    assert evicted == [(A, "size", "s", 500 - 90)]
    totals = {r["topic"]: r["_topic"] for r in out if r["_topic"]}
    assert set(totals) == {A, B, C, None}
    assert [(totals[t]["read"], totals[t]["used"], totals[t]["ticks"]) for t in (A, B, C, None)] == [
        (4, 1, 1), (2, 0, 0), (1, 0, 0), (1, 0, 0)]
    assert totals[A]["last"]["oldest_subscription"] == "s" and totals[B]["last"] is None
    assert (totals[A]["evicted_bytes"], totals[B]["evicted_bytes"]) == (410, None)
    assert totals[B]["max_size"] is None
    # a topic without a check has its own row: not a check, no eviction
    assert sum(1 for r in out if r["topic"] in (B, C, None)) == 3


def test_an_empty_partition_has_no_rows() -> None:
    assert _decide([]) == []


def test_a_partition_of_quarantined_rows_has_their_totals_only() -> None:
    out = _decide([_row(1_000, A, "s", 5, reason="a row rule"), _row(1_000, B, "s", 5),
                   _row(1_000, B, "s", 6)])
    rows = [(r["topic"], r["_rank1"], r["_ev_type"], r["_topic"]["read"], r["_topic"]["used"]) for r in out]
    assert sorted(rows) == [(A, False, None, 1, 0), (B, False, None, 2, 0)]


def _reference(rows: list[dict[str, Any]], policies: Any) -> list[tuple[Any, ...]]:
    snapshots = [Snapshot.from_record(r) for r in rows]
    return [(r.ts_ms, r.backlog_size_bytes, r.backlog_age_seconds, r.exceeded, r.action,
             sorted((e.subscription, e.entries, e.bytes) for e in r.evictions))
            for r in evaluate(policies, snapshots)]


def _kernel(rows: list[dict[str, Any]], policies: Any) -> list[tuple[Any, ...]]:
    out = decide(pa.Table.from_pylist([{**r, "_reason": None} for r in rows], _SCHEMA), policies).to_pylist()
    name = lambda column, r: None if r[column] is None else CODED[column][r[column]]  # noqa: E731
    evicted: dict[int, list[tuple[Any, ...]]] = {}
    for r in out:
        if r["_ev_type"] is not None:
            evicted.setdefault(r["ts_ms"], []).append(
                (r["_ev_subscription"], r["_ev_entries"], r["_ev_bytes"]))
    return [(r["ts_ms"], r["topic_backlog_size_bytes"], r["backlog_age_seconds"], name("exceeded", r),
             name("action", r), sorted(evicted.get(r["ts_ms"], []))) for r in out if r["_rank1"]]


def _snapshot(ts: int, subscription: str, size: int, publish: int | None, close: int | None = None
              ) -> dict[str, Any]:
    return {"ts_ms": ts, "topic": A, "subscription": subscription, "backlog_size_bytes": size,
            "backlog_entries": size // 10 if publish is not None else 0,
            "oldest_unacked_publish_ts_ms": publish,
            "oldest_unacked_ledger_close_ts_ms": close, "partitioned_topic": None}


def _age_policies(precise: bool, limit_size: int = 10**9) -> Any:
    return parse_backlog_policies({
        "broker": {"preciseTimeBasedBacklogQuotaCheck": precise,
                   "backlogQuotaDefaultRetentionPolicy": "consumer_backlog_eviction"},
        "namespaces": {"t/ns": {"message_age": {"limitTime": 10},
                                "destination_storage": {"limitSize": limit_size}}}})


@pytest.mark.parametrize("precise", [True, False])
@pytest.mark.parametrize("off", [-1, 0, 1])
def test_the_kernel_agrees_with_the_reference_at_every_time_boundary(precise: bool, off: int) -> None:
    """Just before, at and just after each time boundary (limit 10 s), a tick each: the time check
    (`tick > base + limit`); precise mode's eviction target (`tick > publish + (long)(0.9 * limit)`);
    estimate mode's expiry of a ledger (`tick - close > limit`), which stops the slowest cursors,
    and the share evicted (`cutoff > publish`); the age rounded toward zero when the base is ahead;
    an open ledger (close time <= 0) gives estimate mode no age."""
    t1, t2, t3, t4, t5 = 1_000_000, 2_000_000, 3_000_000, 4_000_000, 5_000_000
    rows = [
        _snapshot(t1, "a", 500, publish=t1 - 10_000 + off, close=t1 - 10_000 + off),
        _snapshot(t2, "old", 500, publish=t2 - 20_000, close=t2 - 15_000),
        _snapshot(t2, "edge", 300, publish=t2 - 9_000 + off, close=t2 - 10_000 + off),
        _snapshot(t2, "late", 200, publish=t2 - 8_000, close=t2 - 11_000),
        _snapshot(t3, "old", 500, publish=t3 - 20_000, close=t3 - 15_000),
        _snapshot(t3, "share", 300, publish=t3 - 10_000 + off, close=t3 - 10_001),
        _snapshot(t4, "ahead", 50, publish=t4 - 1_500 + off, close=t4 + 1_500 + off),
        _snapshot(t5, "open", 50, publish=t5 - 20_000, close=off),  # an open ledger: close <= 0
    ]
    policies = _age_policies(precise)
    assert _kernel(rows, policies) == _reference(rows, policies)


@pytest.mark.parametrize("size", [99, 100, 101, 111, 112])
def test_the_kernel_agrees_with_the_reference_at_every_size_boundary(size: int) -> None:
    """The size check (`backlog >= limit`) and the skip (`backlog > (long)(0.9 * limit)`, entries
    truncated), with a limit of 100 and 111."""
    for limit in (100, 111):
        rows = [_snapshot(1_000, "s", size, publish=900), _snapshot(1_000, "t", size, publish=900)]
        policies = _age_policies(True, limit_size=limit)
        assert _kernel(rows, policies) == _reference(rows, policies)
