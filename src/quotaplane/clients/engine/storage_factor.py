"""The storage throttle factor in force for a broker at a time, from the storage decisions.

A decision with `observing_broker_id` None comes from the cluster source and applies to every
broker; one with a broker id comes from the deprecated local source and applies to that broker.
The factor in force on broker b at time t is the latest applicable decision with `ts_ms <= t`
(1.0 before the first). Ties at one `ts_ms`: a broker's own decision wins over a cluster one, and
among equals the smallest factor.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class StorageDecision:
    ts_ms: int
    throttle_factor: float
    observing_broker_id: int | None = None


def decision_order(d: StorageDecision) -> tuple[int, int, float]:
    """Sort key: the last decision at or before t in this order is the one in force."""
    return (d.ts_ms, 0 if d.observing_broker_id is None else 1, -d.throttle_factor)


class FactorTimeline:
    """`factor(broker_id, t)` over a fixed list of decisions."""

    def __init__(self, decisions: Iterable[StorageDecision]) -> None:
        self._decisions = sorted(decisions, key=decision_order)
        self._per_broker: dict[int, tuple[list[int], list[float]]] = {}

    def __len__(self) -> int:
        return len(self._decisions)

    def _timeline(self, broker_id: int) -> tuple[list[int], list[float]]:
        cached = self._per_broker.get(broker_id)
        if cached is None:
            applicable = [d for d in self._decisions
                          if d.observing_broker_id is None or d.observing_broker_id == broker_id]
            cached = ([d.ts_ms for d in applicable], [d.throttle_factor for d in applicable])
            self._per_broker[broker_id] = cached
        return cached

    def factor(self, broker_id: int, t: int) -> float:
        times, factors = self._timeline(broker_id)
        index = bisect.bisect_right(times, t)
        return factors[index - 1] if index else 1.0
