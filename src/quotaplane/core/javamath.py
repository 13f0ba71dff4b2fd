"""Java arithmetic the quota code relies on: `Math.round`, the `(int)` cast, the throttle formulas.

Kafka computes throttle times in doubles, rounds them with `Math.round` (half up, exactly; not
Python's `round`, which rounds half to even) into a `long`, and returns them as an `int`.
"""

from __future__ import annotations

import math

LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)
_TWO_63 = 9.223372036854775807e18  # 2^63 as a double


def java_round(x: float) -> int:
    """`Math.round(double)`: the closest long, ties towards positive infinity.

    NaN gives 0; values at or beyond the long range saturate. Exact: `floor(x + 0.5)` would
    round 0.49999999999999994 up, `Math.round` (Java 7+) does not.
    """
    if x != x:
        return 0
    if x >= _TWO_63:
        return LONG_MAX
    if x <= -_TWO_63:
        return LONG_MIN
    f = math.floor(x)
    return f + 1 if x - f >= 0.5 else f


def java_int(value: int) -> int:
    """The `(int)` cast of a long: its low 32 bits as a signed number."""
    low = value & 0xFFFFFFFF
    return low - (1 << 32) if low >= (1 << 31) else low


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
    return java_round(divide(rate - bound, bound) * float(window_ms))


def token_throttle_ms(tokens: float, bound: float) -> int:
    """`ControllerMutationQuotaManager.throttleTimeMs`: `Math.round(-tokens / bound * 1000)`."""
    return java_round(divide(-tokens, bound) * 1000.0)
