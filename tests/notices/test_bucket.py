"""Pulsar's AsyncTokenBucket arithmetic, exactly (docs/notices.md, The token bucket)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from quotaplane.notices.engine.bucket import (
    RATE_PERIOD_NS,
    TokenBucket,
    duration_ns,
    new_tokens,
    target_tokens,
)

RATES = st.integers(1, (2**63 - 1) // RATE_PERIOD_NS)


@given(st.integers(0, 10**18), RATES)
def test_new_tokens_is_javas_formula_without_its_overflow(d: int, rate: int) -> None:
    new = d * rate // RATE_PERIOD_NS
    assert new_tokens(d, rate) == (new, d - (new * RATE_PERIOD_NS) // rate)


@given(st.integers(0, 10**15), RATES)
def test_duration_is_need_times_period_over_rate(need: int, rate: int) -> None:
    assert duration_ns(need, rate) == need * RATE_PERIOD_NS // rate


def test_target_is_the_tokens_of_16_ms_and_at_least_one() -> None:
    assert [target_tokens(r) for r in (1, 62, 63, 125, 1000, 1_000_000)] == [1, 1, 1, 2, 16, 16_000]


def test_a_new_bucket_is_full_and_refills_at_its_rate_up_to_capacity() -> None:
    bucket = TokenBucket(1000, 0)
    assert bucket.consume(0, 999) == 1
    assert bucket.consume(0, 1) == 0
    assert bucket.consume(500_000_000, 0) == 500  # half a second at 1000/s
    assert bucket.consume(10 * RATE_PERIOD_NS, 0) == 1000  # capped at the capacity


def test_the_remainder_carries_forward_so_slow_rates_do_not_lose_tokens() -> None:
    bucket = TokenBucket(3, 0)
    bucket.consume(0, 3)
    for step in range(1, 4):  # three updates a third of a second apart: 333,333,333 ns each
        bucket.consume(step * 333_333_333, 0)
    assert bucket.tokens == 2  # 2.999999997 tokens made: the fraction is carried as nanoseconds
    assert bucket.consume(1_000_000_000, 0) == 3  # ...and becomes the third token at one second


def test_throttling_duration_is_zero_with_tokens_and_the_time_to_the_target_without() -> None:
    bucket = TokenBucket(1000, 0)
    bucket.consume(0, 999)
    assert bucket.throttling_ns(0) == 0
    bucket.consume(0, 101)  # -100
    assert bucket.throttling_ns(0) == 116_000_000  # (16 + 100) tokens at 1000/s
