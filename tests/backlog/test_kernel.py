"""The numpy kernel of the Spark stage (`quotaplane.backlog.engine.kernel`) on what the generated
fleets of the differential test never hold: rows the reader's row rules quarantined, the group
rules (a subscription twice at a tick, a tick that disagrees on `partitioned_topic`) and topics
whose every row is quarantined."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from quotaplane.backlog.config import parse_backlog_policies
from quotaplane.backlog.engine.kernel import CODED, INPUT, decide

A, B, C = "persistent://t/ns/a", "persistent://t/ns/b", "persistent://t/ns/c"
POLICIES = parse_backlog_policies({
    "broker": {"backlogQuotaDefaultRetentionPolicy": "consumer_backlog_eviction"},
    "namespaces": {"t/ns": {"destination_storage": {"limitSize": 100}}}})


def _row(ts: int, topic: str | None, subscription: str, size: int = 0, reason: str | None = None,
         parent: str | None = None) -> dict[str, Any]:
    return {"ts_ms": ts, "topic": topic, "subscription": subscription, "backlog_size_bytes": size,
            "backlog_entries": 10 if size else 0, "oldest_unacked_publish_ts_ms": 1 if size else None,
            "oldest_unacked_ledger_close_ts_ms": None, "partitioned_topic": parent, "_reason": reason}


def _decide(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    table = pa.Table.from_pylist(rows, pa.schema([
        (n, pa.string() if n in ("topic", "subscription", "partitioned_topic", "_reason") else pa.int64())
        for n in INPUT]))
    return decide(table, POLICIES).to_pylist()


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
