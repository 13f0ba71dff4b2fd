"""Kafka's sampled Rate (3.8+ rules) at every boundary."""

from __future__ import annotations

import pytest

from quotaplane.clients.engine.sampled_rate import SampledRate


def test_the_kafka_test_vector() -> None:
    """ClientQuotaManagerTest.testQuotaViolation: 400 B every 1 s ten times, then 2300 B 500 ms later."""
    rate = SampledRate(11, 1000)
    for i in range(10):
        rate.record(400, 1000 * i)
    rate.record(2300, 9500)
    assert rate.measure(9500) == (600.0, 10_500)


def test_first_window_is_padded_to_samples_minus_one_windows() -> None:
    rate = SampledRate(11, 1000)
    rate.record(1000, 0)
    # elapsed 0, 0 full windows < 10: + 10 windows
    assert rate.measure(0) == (100.0, 10_000)
    # elapsed 999: still 0 full windows
    assert rate.measure(999) == (1000 / 10.999, 10_999)


def test_window_is_never_below_one_ms() -> None:
    rate = SampledRate(1, 1000)  # samples - 1 = 0: no padding
    rate.record(5, 100)
    assert rate.measure(100) == (5000.0, 1)


def test_a_sample_is_complete_at_exactly_one_window() -> None:
    rate = SampledRate(2, 1000)
    rate.record(10, 0)
    rate.record(10, 999)  # same sample
    assert rate._starts == [0]
    rate.record(10, 1999)  # 1999 - 0 >= 1000: next slot starts at 1999
    assert rate._starts == [0, 1999]


def test_samples_plus_one_slots_in_a_ring() -> None:
    rate = SampledRate(2, 1000)
    for t in (0, 1000, 2000, 3000):
        rate.record(1, t)
    assert len(rate._starts) == 3
    assert sorted(rate._starts) == [1000, 2000, 3000]


@pytest.mark.parametrize(("now", "purged"), [(2999, False), (3000, True)])
def test_purge_at_samples_times_window_since_the_last_event(now: int, purged: bool) -> None:
    rate = SampledRate(3, 1000)
    rate.record(100, 0)  # last event 0; expire age 3000
    assert rate.total(now) == (0 if purged else 100)


def test_a_sample_started_before_the_window_still_counts_while_it_has_recent_events() -> None:
    rate = SampledRate(2, 1000)
    rate.record(100, 0)
    rate.record(100, 900)  # same sample, last event 900
    # at 2500: 2500 - 900 < 2000, kept though it started 2500 ms ago
    assert rate.total(2500) == 200
    assert rate.window_size(2500) == 2500


def test_after_a_long_gap_the_window_restarts() -> None:
    rate = SampledRate(11, 1000)
    rate.record(5000, 0)
    rate.record(100, 60_000)
    assert rate.measure(60_000) == (10.0, 10_000)


def test_negative_values_unrecord() -> None:
    rate = SampledRate(11, 1000)
    rate.record(400, 0)
    rate.record(700, 500)
    rate.record(-700, 500)
    assert rate.total(500) == 400


def test_measuring_before_any_record() -> None:
    rate = SampledRate(2, 1000)
    assert rate.measure(5000) == (0.0, 1000)
