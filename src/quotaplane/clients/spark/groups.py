"""The per-group arithmetic of the Spark stage, over numpy arrays (no Spark).

spec: Kafka client quotas, the rules of `quotaplane.clients.engine.evaluate`.
`decider` evaluates the recorded requests of one (config, broker, quota type), sorted by sharing
group, time and input order, with the kernels of `kernels`: sampled rates of all its groups in one
vectorised pass over one shifted timeline, controller mutations group by group. The storage
throttle factor in force (produce, with the storage callback) is looked up with `searchsorted`
over the storage decisions (`FactorTable`), which are small and travel with the function.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from quotaplane.clients.engine import kernels
from quotaplane.clients.engine.quota_types import (
    CONTROLLER_MUTATION,
    FETCH,
    NANOS_TO_PERCENTAGE_PER_SECOND,
    PRODUCE,
    REQUEST,
)
from quotaplane.clients.engine.settings import STRICT, ClientQuotaSettings
from quotaplane.core.javamath import math_round

SOURCES = (None, "client", "static")  # quota_source by its code


@dataclass(frozen=True)
class FactorTable:
    """Storage decisions in decision order (ts, cluster before broker, smallest factor last)."""

    ts_ms: np.ndarray
    factor: np.ndarray
    observing_broker_id: np.ndarray  # -1 where the decision is cluster-wide
    cluster: np.ndarray

    @staticmethod
    def from_pandas(pdf: pd.DataFrame | None) -> FactorTable:
        if pdf is None or pdf.empty:
            empty = np.zeros(0)
            return FactorTable(empty.astype(np.int64), empty, empty.astype(np.int64), empty.astype(bool))
        ts = pdf["ts_ms"].to_numpy(dtype=np.int64)
        factor = pdf["throttle_factor"].to_numpy(dtype=np.float64)
        observing = (pdf["observing_broker_id"] if "observing_broker_id" in pdf
                     else pd.Series([None] * len(pdf), dtype=object))
        cluster = observing.isna().to_numpy()
        broker = np.where(cluster, -1, observing.fillna(-1).to_numpy(dtype=np.float64)).astype(np.int64)
        order = np.lexsort((-factor, (~cluster).astype(np.int64), ts))
        return FactorTable(ts[order], factor[order], broker[order], cluster[order])

    def for_broker(self, broker_id: int) -> tuple[np.ndarray, np.ndarray]:
        keep = self.cluster | (self.observing_broker_id == broker_id)
        return self.ts_ms[keep], self.factor[keep]


def units_of(quota_type: str, value: np.ndarray) -> np.ndarray:
    if quota_type == REQUEST:
        return math_round.array(value * 1e6)
    return value.astype(np.int64)


@dataclass(frozen=True)
class Decided:
    """The decisions of one (config, broker, type) run of recorded requests, in its order."""

    units: np.ndarray
    limit: np.ndarray  # NaN: unlimited
    source: np.ndarray  # index in SOURCES
    factor: np.ndarray  # NaN: none
    result: kernels.GroupResult
    seq: np.ndarray


Decide = Callable[[str, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray], Decided]


def decider(settings: ClientQuotaSettings, factors: FactorTable) -> Decide:
    """`decide(quota_type, broker_id, t, value, base_limit, group)`: the recorded requests of one
    config, broker and type, sorted by sharing group (`group`, any integer code), time and input
    order. Sampled rates: all groups in one vectorised pass over one shifted timeline; controller
    mutations: group by group."""
    mutation_args = (settings.controller_mutation_mode == STRICT, settings.controller_window_num,
                     settings.controller_window_ms, settings.metrics_num_samples,
                     settings.metrics_sample_window_ms)

    def decide(quota_type: str, broker_id: int, t: np.ndarray, value: np.ndarray, base: np.ndarray,
               group_code: np.ndarray) -> Decided:
        n = t.size
        units = units_of(quota_type, value)
        limit, source, factor = _limits(quota_type, broker_id, base, t)
        new = np.r_[True, group_code[1:] != group_code[:-1]] if n else np.zeros(0, dtype=bool)
        starts = np.flatnonzero(new)
        group = np.cumsum(new) - 1
        seq = np.arange(n, dtype=np.int64) - starts[group]
        shifted = _one_timeline(t, group)
        if quota_type == CONTROLLER_MUTATION or shifted is None:
            result = _group_by_group(quota_type, t, units, limit, [*starts.tolist(), n])
        else:
            result = kernels.sampled_group(
                shifted, units, limit, settings.window_num, settings.window_ms,
                scale=NANOS_TO_PERCENTAGE_PER_SECOND if quota_type == REQUEST else 1.0,
                cap_ms=settings.request_max_throttle_ms if quota_type == REQUEST else None,
                unrecord=quota_type == FETCH, group_starts=starts)
        return Decided(units, limit, source, factor, result, seq)

    def _one_timeline(t: np.ndarray, group: np.ndarray) -> np.ndarray | None:
        """The sharing groups' times laid end to end, each after a gap longer than any window and
        purge age, so that one pass over all of them evaluates each as if alone (only time
        differences matter to a sampled rate). None if that would not fit in a long."""
        if t.size == 0:
            return t
        low = int(t.min())
        gap = int(t.max()) - low + (settings.window_num + 2) * settings.window_ms
        if int(group[-1]) * gap + gap >= 2**62:
            return None
        return (t - low) + group * gap

    def _group_by_group(quota_type: str, t: np.ndarray, units: np.ndarray, limit: np.ndarray,
                        bounds: list[int]) -> kernels.GroupResult:
        parts = []
        for start, end in itertools.pairwise(bounds):
            part = slice(start, end)
            if quota_type == CONTROLLER_MUTATION:
                parts.append(kernels.mutation_group(t[part], units[part], float(limit[start]),
                                                    *mutation_args))
            else:
                parts.append(kernels.sampled_group(
                    t[part], units[part], limit[part], settings.window_num, settings.window_ms,
                    scale=NANOS_TO_PERCENTAGE_PER_SECOND if quota_type == REQUEST else 1.0,
                    cap_ms=settings.request_max_throttle_ms if quota_type == REQUEST else None,
                    unrecord=quota_type == FETCH))
        if not parts:
            empty = np.zeros(0)
            return kernels.GroupResult(empty, empty.astype(np.int64), empty, empty.astype(bool),
                                       empty.astype(np.int64))
        return kernels.GroupResult(*(np.concatenate([getattr(p, f) for p in parts])
                                     for f in ("rate", "window_ms", "tokens", "violated", "throttle_ms")))

    def _limits(quota_type: str, broker_id: int, base: np.ndarray,
                t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Effective limit (NaN: unlimited), source code and storage factor of each request."""
        has_client = ~np.isnan(base)
        if quota_type == PRODUCE and settings.storage_combined:
            times, values = factors.for_broker(broker_id)
            factor = kernels.factor_in_force(times, values, t)
            static = np.nan if settings.static_produce is None else settings.static_produce
            chosen = np.where(has_client, base, static)
            with np.errstate(invalid="ignore"):
                limit = np.where(np.isnan(chosen), np.where(factor == 0.0, 1.0, np.nan),
                                 np.maximum(chosen * factor, 1.0))
            return limit, np.where(has_client, 1, 2), factor
        return base, np.where(has_client, 1, 0), np.full(t.size, np.nan)

    return decide
