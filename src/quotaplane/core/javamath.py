"""Java's numerics that the quota code relies on, each in three forms under one name.

Every function is a `JavaFunction`: call it on a Python number (`math_round(2.5)`), use `.array` on
a numpy array (the kernels) or `.column` on a Spark column (the Spark stages); the three give the
same values, bit for bit (checked against each other by tests/core/test_javamath.py). The Spark
form imports pyspark only when it is used, so the pure-Python engines import this module without
it.

- `math_round`: `Math.round(double)` (Java 7+): the closest long, ties towards positive infinity,
  NaN is 0, saturating at the long range. Not Python's `round` (half to even) and not
  `floor(x + 0.5)` (which rounds 0.49999999999999994 up).
- `long_to_int`: the `(int)` cast of a long (JLS 5.1.3, narrowing): its low 32 bits, signed.
- `double_to_int`, `double_to_long`: the `(int)` / `(long)` cast of a double (JLS 5.1.3): truncate
  towards zero, saturate at the target's range, NaN is 0.
- `divide`: IEEE division as in Java (x/0 is +-infinity, 0/0 is NaN; Python would raise).
- `rate_throttle_ms`, `token_throttle_ms`: Kafka's throttle formulas (`QuotaUtils.throttleTime`,
  `ControllerMutationQuotaManager.throttleTimeMs`), which round with `Math.round`.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from pyspark.sql import Column

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
DOUBLE_MAX = sys.float_info.max  # Double.MAX_VALUE
_TWO_63 = 9.223372036854775807e18  # 2^63 as a double: the first double past the long range


class JavaFunction:
    """One Java operation: the scalar form when called, `.array` (numpy) and `.column` (Spark)."""

    def __init__(self, scalar: Callable[[Any], Any], array: Callable[[np.ndarray], np.ndarray],
                 column: Callable[[Column], Column]) -> None:
        self._scalar = scalar
        self.array = array
        self.column = column
        self.__doc__ = scalar.__doc__
        self.__name__ = scalar.__name__

    def __call__(self, x: Any) -> Any:
        return self._scalar(x)


def _round_scalar(x: float) -> int:
    """`Math.round(double)`."""
    if x != x:
        return 0
    if x >= _TWO_63:
        return LONG_MAX
    if x <= -_TWO_63:
        return LONG_MIN
    f = math.floor(x)
    return f + 1 if x - f >= 0.5 else f


def _round_array(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    out = np.zeros(x.shape, dtype=np.int64)
    big = x >= _TWO_63
    small = x <= -_TWO_63
    ok = ~(big | small | np.isnan(x))
    xs = x[ok]
    floor = np.floor(xs)
    out[ok] = (floor + (xs - floor >= 0.5)).astype(np.int64)
    out[big] = LONG_MAX
    out[small] = LONG_MIN
    return out


def _round_column(x: Column) -> Column:
    from pyspark.sql import functions as F

    x = x.cast("double")
    floor = F.floor(x)
    return (F.when(F.isnan(x), F.lit(0).cast("long"))
            .when(x >= F.lit(_TWO_63), F.lit(LONG_MAX).cast("long"))
            .when(x <= F.lit(-_TWO_63), F.lit(LONG_MIN).cast("long"))
            .when(x - floor >= F.lit(0.5), floor + F.lit(1))
            .otherwise(floor).cast("long"))


def _low_int_scalar(value: int) -> int:
    """`(int)` of a long: the low 32 bits, signed."""
    low = value & 0xFFFFFFFF
    return low - (1 << 32) if low >= (1 << 31) else low


def _low_int_array(values: np.ndarray) -> np.ndarray:
    low = np.asarray(values, dtype=np.int64) & np.int64(0xFFFFFFFF)
    return np.where(low >= 2**31, low - 2**32, low)


def _low_int_column(x: Column) -> Column:
    from pyspark.sql import functions as F

    low = x.cast("long").bitwiseAND(F.lit(0xFFFFFFFF))
    return F.when(low >= F.lit(2**31), low - F.lit(2**32)).otherwise(low)


def _saturating(lo: int, hi: int, hi_double: float) -> tuple[Callable[[float], int],
                                                               Callable[[np.ndarray], np.ndarray],
                                                               Callable[[Column], Column]]:
    """The scalar, array and column forms of `(int)`/`(long)` of a double: truncate towards zero,
    saturate at [lo, hi] (any double >= `hi_double` gives hi), NaN is 0."""

    def scalar(x: float) -> int:
        if x != x:
            return 0
        return hi if x >= hi_double else lo if x <= lo else int(x)

    def array(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        out = np.zeros(x.shape, dtype=np.int64)
        big, small = x >= hi_double, x <= lo
        ok = ~(big | small | np.isnan(x))
        out[ok] = np.trunc(x[ok]).astype(np.int64)
        out[big], out[small] = hi, lo
        return out

    def column(x: Column) -> Column:
        from pyspark.sql import functions as F

        x = x.cast("double")
        return (F.when(F.isnan(x), F.lit(0).cast("long"))
                .when(x >= F.lit(hi_double), F.lit(hi).cast("long"))
                .when(x <= F.lit(float(lo)), F.lit(lo).cast("long"))
                .otherwise(x.cast("long")))

    return scalar, array, column


math_round = JavaFunction(_round_scalar, _round_array, _round_column)
long_to_int = JavaFunction(_low_int_scalar, _low_int_array, _low_int_column)
double_to_int = JavaFunction(*_saturating(INT_MIN, INT_MAX, float(INT_MAX)))
double_to_int.__doc__ = "`(int)` of a double: truncate towards zero, saturate, NaN is 0."
double_to_long = JavaFunction(*_saturating(LONG_MIN, LONG_MAX, _TWO_63))
double_to_long.__doc__ = "`(long)` of a double: truncate towards zero, saturate, NaN is 0."


def divide(a: float, b: float) -> float:
    """IEEE division as in Java: x/0 is +-infinity, 0/0 is NaN (Python would raise)."""
    if b == 0.0:
        if a == 0.0 or a != a:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def rate_throttle_ms(rate: float, bound: float, window_ms: int) -> int:
    """`QuotaUtils.throttleTime`: `Math.round((rate - bound) / bound * windowSize)` as a long.

    Derived from O*W/(W+X) = T: the delay X that brings the windowed rate back to the bound,
    over the precise window `Rate.windowSize` measured with.
    """
    return math_round(divide(rate - bound, bound) * float(window_ms))


def token_throttle_ms(tokens: float, bound: float) -> int:
    """`ControllerMutationQuotaManager.throttleTimeMs`: `Math.round(-tokens / bound * 1000)`."""
    return math_round(divide(-tokens, bound) * 1000.0)
