"""Java's Math.round, the (int) cast, IEEE division and the two throttle formulas."""

from __future__ import annotations

import math

import pytest

from quotaplane.core.javamath import (
    LONG_MAX,
    LONG_MIN,
    divide,
    java_int,
    java_round,
    rate_throttle_ms,
    token_throttle_ms,
)


@pytest.mark.parametrize(("x", "expected"), [
    (0.5, 1), (1.5, 2), (2.5, 3),            # half up, where Python's round() gives 0, 2, 2
    (-0.5, 0), (-1.5, -1), (-2.5, -2),        # ties go towards positive infinity
    (0.49999999999999994, 0),                 # floor(x + 0.5) would give 1
    (2.4999999, 2), (2.5000001, 3), (-0.0, 0),
    (float("nan"), 0), (float("inf"), LONG_MAX), (float("-inf"), LONG_MIN),
    (1e19, LONG_MAX), (-1e19, LONG_MIN), (4503599627370497.0, 4503599627370497),
])
def test_java_round(x: float, expected: int) -> None:
    assert java_round(x) == expected


def test_python_round_differs_at_ties() -> None:
    assert round(2.5) == 2 and java_round(2.5) == 3


@pytest.mark.parametrize(("value", "expected"), [
    (0, 0), (2100, 2100), (2**31 - 1, 2**31 - 1), (2**31, -(2**31)), (2**32, 0), (2**32 + 5, 5),
    (LONG_MAX, -1), (-1, -1), (LONG_MIN, 0),
])
def test_java_int_keeps_the_low_32_bits(value: int, expected: int) -> None:
    assert java_int(value) == expected


def test_divide_is_ieee() -> None:
    assert divide(1.0, 0.0) == math.inf
    assert divide(-1.0, 0.0) == -math.inf
    assert divide(1.0, -0.0) == -math.inf
    assert math.isnan(divide(0.0, 0.0))
    assert divide(3.0, 2.0) == 1.5


def test_rate_throttle_is_the_kafka_test_vector() -> None:
    # ClientQuotaManagerTest.testQuotaViolation: 600 B/s against 500 over a 10.5 s window.
    assert rate_throttle_ms(600.0, 500.0, 10_500) == 2100


def test_rate_throttle_rounds_half_up() -> None:
    # (501 - 500) / 500 * 1250 = 2.5 -> 3 (Python's round would give 2)
    assert rate_throttle_ms(501.0, 500.0, 1250) == 3
    # (501 - 500) / 500 * 1249 = 2.498 -> 2
    assert rate_throttle_ms(501.0, 500.0, 1249) == 2


def test_rate_throttle_with_a_zero_quota_saturates() -> None:
    assert rate_throttle_ms(10.0, 0.0, 1000) == LONG_MAX


def test_token_throttle_is_the_kip_599_example() -> None:
    # Q=5/s, a burst leaving -60 tokens: 12 s.
    assert token_throttle_ms(-60.0, 5.0) == 12_000
    assert token_throttle_ms(-0.0025, 5.0) == 1  # 0.5 ms rounds up
    assert token_throttle_ms(-0.0024, 5.0) == 0
