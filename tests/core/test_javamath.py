"""Java's Math.round, the (int) cast, IEEE division and the two throttle formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quotaplane.core.javamath import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    divide,
    double_to_int,
    double_to_long,
    long_to_int,
    math_round,
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
    assert math_round(x) == expected


def test_python_round_differs_at_ties() -> None:
    assert round(2.5) == 2 and math_round(2.5) == 3


@pytest.mark.parametrize(("value", "expected"), [
    (0, 0), (2100, 2100), (2**31 - 1, 2**31 - 1), (2**31, -(2**31)), (2**32, 0), (2**32 + 5, 5),
    (LONG_MAX, -1), (-1, -1), (LONG_MIN, 0),
])
def test_java_int_keeps_the_low_32_bits(value: int, expected: int) -> None:
    assert long_to_int(value) == expected


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


# The three forms of every function agree: scalar == numpy array == Spark column.
EDGES = [0.0, -0.0, 0.5, -0.5, 0.49999999999999994, 2.5, -2.5, 1e19, -1e19, math.inf, -math.inf, math.nan,
         float(INT_MAX), float(INT_MAX) + 0.5, float(INT_MIN), float(INT_MIN) - 0.5, 9.223372036854775807e18,
         -9.223372036854775807e18, 9.223372036854774784e18, 4503599627370497.0]
DOUBLE_FUNCTIONS = {"math_round": math_round, "double_to_int": double_to_int,
                    "double_to_long": double_to_long}
doubles = st.lists(st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(EDGES), min_size=1,
                   max_size=60)
longs = st.lists(st.integers(LONG_MIN, LONG_MAX) | st.sampled_from([0, -1, 2**31, 2**31 - 1, -(2**31),
                                                                     LONG_MAX, LONG_MIN]),
                 min_size=1, max_size=60)


def _same(a: object, b: object) -> bool:
    return a == b and type(a) is type(b)


@given(doubles)
def test_scalar_and_array_forms_agree_on_doubles(values: list[float]) -> None:
    for name, fn in DOUBLE_FUNCTIONS.items():
        array = fn.array(np.array(values, dtype=np.float64)).tolist()
        assert all(_same(s, a) for s, a in zip([fn(v) for v in values], array, strict=True)), name


@given(longs)
def test_scalar_and_array_forms_agree_on_longs(values: list[int]) -> None:
    assert long_to_int.array(np.array(values, dtype=np.int64)).tolist() == [long_to_int(v) for v in values]


@pytest.mark.spark
@settings(parent=settings.get_profile("differential"))  # one Spark job per example
@given(doubles, longs)
def test_column_form_agrees_with_the_scalar_form(spark, values: list[float], ints: list[int]) -> None:
    from pyspark.sql import functions as F

    rows = [(i, v, ints[i % len(ints)]) for i, v in enumerate(values)]
    df = spark.createDataFrame(rows, "i long, x double, n long")
    got = df.select("i", *[fn.column(F.col("x")).alias(name) for name, fn in DOUBLE_FUNCTIONS.items()],
                    long_to_int.column(F.col("n")).alias("long_to_int")).orderBy("i").collect()
    for (_, x, n), row in zip(rows, got, strict=True):
        for name, fn in DOUBLE_FUNCTIONS.items():
            assert row[name] == fn(x), (name, x)
        assert row["long_to_int"] == long_to_int(n), n
