"""A least-squares line through measured points, and how well it fits (R²)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class LinearFit:
    """`y = intercept + slope * x` over `points` points; `r2` is None when y does not vary."""

    slope: float
    intercept: float
    r2: float | None
    points: int

    def at(self, x: float) -> float:
        return self.intercept + self.slope * x

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def linear_fit(xs: Sequence[float], ys: Sequence[float]) -> LinearFit:
    """Ordinary least squares; needs two points with different x."""
    if len(xs) != len(ys):
        raise ValueError("xs and ys differ in length")
    n = len(xs)
    if n < 2 or len(set(xs)) < 2:
        raise ValueError("a line needs at least two different x values")
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mean_x) ** 2 for x in xs)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True))
    slope = sxy / sxx
    intercept = mean_y - slope * mean_x
    ss_tot = sum((y - mean_y) ** 2 for y in ys)
    ss_res = sum((y - (intercept + slope * x)) ** 2 for x, y in zip(xs, ys, strict=True))
    r2 = None if ss_tot == 0 else 1.0 - ss_res / ss_tot
    return LinearFit(slope, intercept, r2, n)
