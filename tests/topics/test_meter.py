"""The Yammer 2.2 one-minute rate in event time (metrics-core 2.2.0 `Meter` and `EWMA`)."""

from __future__ import annotations

import math

from quotaplane.topics.engine.meter import M1_ALPHA, TICK_MS, Meter, tick_rate


def test_alpha_is_one_minus_e_to_the_minus_5_over_60() -> None:
    assert 1 - math.exp(-5 / 60.0) == M1_ALPHA
    assert abs(M1_ALPHA - 0.0799555853706767) < 1e-16


def test_rate_reads_zero_before_the_first_tick() -> None:
    m = Meter(1000)
    m.mark(5000)
    m.advance(1000 + TICK_MS - 1)
    assert m.one_minute_rate() == 0.0
    assert m.count == 5000


def test_first_tick_is_at_creation_plus_5s_and_sets_the_rate() -> None:
    m = Meter(1000)
    m.mark(5000)
    m.advance(6000)  # exactly creation + 5 s: the tick applies
    assert m.one_minute_rate() == 5000 / 5e9 * 1e9 == 1000.0
    assert m.initialized


def test_later_ticks_are_the_ewma_in_yammer_arithmetic() -> None:
    m = Meter(0)
    m.mark(5000)
    m.advance(5000)
    m.mark(10_000)
    m.advance(10_000)
    per_ns = 5000 / 5e9
    expected = per_ns + M1_ALPHA * (10_000 / 5e9 - per_ns)
    assert m.rate == expected
    assert m.one_minute_rate() == expected * 1e9


def test_ticks_with_nothing_marked_decay_the_rate() -> None:
    m = Meter(0)
    m.mark(5000)
    m.advance(5000)
    m.advance(14_999)  # one more tick (at 10 s), not the one at 15 s
    assert m.rate == tick_rate(5000 / 5e9, True, 0)
    assert m.next_tick_ms == 15_000


def test_first_tick_with_nothing_marked_initialises_at_zero() -> None:
    m = Meter(0)
    m.advance(5000)
    assert (m.rate, m.initialized) == (0.0, True)
    m.mark(5000)
    m.advance(10_000)
    assert m.rate == 0.0 + M1_ALPHA * (5000 / 5e9 - 0.0)  # not the first tick any more


def test_long_idle_gaps_equal_ticking_one_by_one() -> None:
    fast, slow = Meter(0), Meter(0)
    for m in (fast, slow):
        m.mark(123_456_789)
    fast.advance(200_000_000)
    t = 0
    while t + TICK_MS <= 200_000_000:
        t += TICK_MS
        slow.advance(t)
    assert fast.rate == slow.rate
    assert fast.next_tick_ms == slow.next_tick_ms == 200_000_000 + TICK_MS
    assert 0.0 < fast.rate < 1e-300  # the decay stops at a subnormal fixed point, not at zero


def test_marks_after_an_idle_gap_count_only_from_the_next_tick() -> None:
    m = Meter(0)
    m.advance(60_000)
    m.mark(5000)
    m.advance(64_999)
    assert m.rate == 0.0
    m.advance(65_000)
    assert m.rate == 0.0 + M1_ALPHA * (5000 / 5e9)
