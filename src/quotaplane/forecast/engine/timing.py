"""Time until a level is reached at a constant growth: the arithmetic both engines share.

docs/forecast.md, "Time to a limit": 0 when the level is already reached (the limit's own
comparison, e.g. `available <= threshold`), `(distance) / growth` seconds when growing (growth > 0)
and that is within the horizon, else None (not approached).
"""

from __future__ import annotations


def seconds_to(reached: bool, distance: float, growth: float | None, horizon_seconds: float) -> float | None:
    if reached:
        return 0.0
    if growth is None or not growth > 0.0:
        return None
    seconds = distance / growth
    return seconds if seconds <= horizon_seconds else None


def band(growth: float | None, recent: float | None) -> tuple[float | None, float | None]:
    """(slowest, fastest) growth of the band: the window's and its second half's."""
    if growth is None or recent is None:
        return growth, growth
    return min(growth, recent), max(growth, recent)


def earliest(*times: float | None) -> float | None:
    known = [t for t in times if t is not None]
    return min(known) if known else None
