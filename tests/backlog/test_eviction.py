"""Eviction targets, skips and the time estimates (BacklogQuotaManager)."""

from __future__ import annotations

import pytest

from quotaplane.backlog.engine.eviction import (
    entries_to_skip,
    eviction_target,
    size_eviction,
    time_evictions,
)
from quotaplane.backlog.engine.model import Eviction
from quotaplane.core.javamath import double_to_int, double_to_long
from tests.backlog.builders import snap


@pytest.mark.parametrize(("limit", "target"), [(0, 0), (1, 0), (10, 9), (11, 9), (100, 90), (1001, 900)])
def test_eviction_target_is_ninety_percent_truncated(limit: int, target: int) -> None:
    assert eviction_target(limit) == target


def test_java_casts_truncate_toward_zero_and_saturate() -> None:
    assert double_to_int(2.9) == 2 and double_to_int(-2.9) == -2 and double_to_int(float("nan")) == 0
    assert double_to_int(1e12) == 2**31 - 1 and double_to_int(-1e12) == -(2**31)
    assert double_to_long(1e30) == 2**63 - 1 and double_to_long(-1e30) == -(2**63)
    assert double_to_long(3.99) == 3


def test_skip_brings_the_backlog_to_ninety_percent() -> None:
    # backlog 1000 bytes in 10 entries, limit 1000 -> target 900: skip (100 * 10 / 1000) = 1 entry
    assert entries_to_skip(1000, 1000, 10) == 1
    assert size_eviction(snap(sub="s", size=1000, entries=10), 1000) == (Eviction("s", 1, 100),)


def test_nothing_is_reported_when_no_entry_would_be_skipped() -> None:
    assert entries_to_skip(1000, 1000, 9) == 0  # 100 * 9 / 1000 = 0.9 -> 0
    assert size_eviction(snap(size=1000, entries=9), 1000) == ()
    assert entries_to_skip(0, 0, 0) == 0  # limit 0, empty backlog: not above the target
    assert size_eviction(None, 0) == ()


def test_precise_time_eviction_reaches_every_subscription_past_ninety_percent() -> None:
    tick = 100_000
    rows = [snap(ts=tick, sub="old", publish=0, entries=100, size=1000),
            snap(ts=tick, sub="edge", publish=tick - 54_000, entries=10, size=10),  # exactly the target
            snap(ts=tick, sub="past", publish=tick - 54_001, entries=10, size=10),
            snap(ts=tick, sub="none", entries=0, size=0)]
    # limit 60 s -> target 54 s -> cutoff 46 000; "old": 46/100 of its backlog
    got = time_evictions(tick, rows, 60, precise=True)
    assert got == (Eviction("old", 46, 460), Eviction("past", 0, 0))


def test_estimate_time_eviction_stops_at_a_cursor_in_an_open_ledger() -> None:
    tick = 100_000
    rows = [snap(ts=tick, sub="old", publish=0, close=10_000, entries=100, size=1000),
            snap(ts=tick, sub="young", publish=1, entries=100, size=1000)]
    # cutoff tick - 60 s = 40 000: 40% of "old"; "young" is in the open ledger
    assert time_evictions(tick, rows, 60, precise=False) == (Eviction("old", 40, 400),)
    late = snap(ts=tick, sub="late", publish=50_000, close=1, entries=5, size=5)
    assert time_evictions(tick, [late], 60, precise=False) == (Eviction("late", 0, 0),)
    assert time_evictions(tick, [], 60, precise=False) == ()


def test_estimate_time_eviction_moves_every_slowest_cursor_in_an_expired_closed_ledger() -> None:
    """`dropBacklogForTimeLimit` picks the slowest cursor again after each skip: every cursor whose
    ledger is closed and past the limit moves, slowest first, until one is not."""
    tick = 100_000
    a = snap(ts=tick, sub="a", publish=0, close=10_000, entries=100, size=1000)
    b = snap(ts=tick, sub="b", publish=20_000, close=39_999, entries=10, size=100)   # 60 001 ms ago
    edge = snap(ts=tick, sub="edge", publish=30_000, close=40_000, entries=10, size=100)  # exactly 60 s
    c = snap(ts=tick, sub="c", publish=35_000, close=1_000, entries=10, size=100)  # expired, but after edge
    assert time_evictions(tick, [a, b], 60, precise=False) == (Eviction("a", 40, 400), Eviction("b", 2, 25))
    assert time_evictions(tick, [c, edge, b, a], 60, precise=False) == (Eviction("a", 40, 400),
                                                                          Eviction("b", 2, 25))
    assert time_evictions(tick, [a, b, c], 60, precise=False) == (
        Eviction("a", 40, 400), Eviction("b", 2, 25), Eviction("c", 0, 7))


def test_precise_time_eviction_with_a_one_second_limit_expires_everything_published_before() -> None:
    tick = 10_000
    row = snap(ts=tick, sub="s", publish=9_000, entries=7, size=70)
    assert time_evictions(tick, [row], 1, precise=True) == (Eviction("s", 7, 70),)
