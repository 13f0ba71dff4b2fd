"""Time until a level is reached: the arithmetic both engines share.

docs/forecast.md, "Time to a limit": 0 when the level is already reached (the limit's own
comparison, e.g. `available <= threshold`); with an acceleration `a > 0` the positive root of
`growth * t + a * t**2 / 2 = distance`, `(-growth + sqrt(growth**2 + 2 * a * distance)) / a` (0 when
the distance is not positive); else
`distance / growth` when growing (growth > 0); and only when that is within the horizon, else None
(not approached).
"""

from __future__ import annotations

import math


def seconds_to(reached: bool, distance: float, growth: float | None, horizon_seconds: float,
               acceleration: float = 0.0) -> float | None:
    if reached:
        return 0.0
    if growth is None:
        return None
    if acceleration > 0.0:
        if distance <= 0.0:
            return 0.0
        seconds = (-growth + math.sqrt(growth * growth + 2.0 * acceleration * distance)) / acceleration
    elif growth > 0.0:
        seconds = distance / growth
    else:
        return None
    return seconds if seconds <= horizon_seconds else None


def band(growth: float | None, recent: float | None) -> tuple[float | None, float | None]:
    """(slowest, fastest) growth of the band: the window's and its second half's."""
    if growth is None or recent is None:
        return growth, growth
    return min(growth, recent), max(growth, recent)


def earliest(*times: float | None) -> float | None:
    known = [t for t in times if t is not None]
    return min(known) if known else None
