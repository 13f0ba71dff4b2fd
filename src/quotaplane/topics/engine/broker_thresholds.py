"""One broker's topic thresholds with numpy: each request's, and each topic's at `as_of_ms`.

spec: kafka-topic-bytes-in-quota (Low level design, 1); the rules are those of
`quotaplane.topics.engine.thresholds.ThresholdSchedule.threshold`, evaluated for every request at
once (the inputs of `kernel.evaluate_broker`, in the Spark stage's per-broker group):

- explicit: per configured topic, its validity intervals `[from_ms, to_ms)` (`explicit_intervals`)
  looked up by bisection;
- default share `(total - S) // (N - E)`: `S, E` are the explicit sum and count after the last
  setting at or before the time (bisection in the schedule's steps); `N` the broker's topic-set
  size then: the topics whose entry (the earlier of their first request on the broker and their
  first accepted setting) is at or before the time, so every request of a millisecond sees the
  topics first seen in it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from quotaplane.topics.engine.thresholds import ThresholdSchedule

_NEVER = np.iinfo(np.int64).max


@dataclass
class BrokerThresholds:
    """Per request: the threshold and whether it is explicit; per topic code: the same at `as_of_ms`."""

    value: np.ndarray
    explicit: np.ndarray
    final_value: np.ndarray
    final_explicit: np.ndarray


def broker_thresholds(schedule: ThresholdSchedule, ts: np.ndarray, topic: np.ndarray,
                      names: Sequence[str], as_of_ms: int) -> BrokerThresholds:
    """Thresholds of one broker's requests (`ts` int64, `topic` codes into `names`, every code used)
    and of its topics at `as_of_ms` (at or after every request)."""
    n_topics = len(names)
    code_of = {name: i for i, name in enumerate(names)}
    entry = np.full(n_topics, _NEVER, dtype=np.int64)
    np.minimum.at(entry, topic, ts)
    others = []
    for ts_ms, name in schedule.configured:
        code = code_of.get(name)
        if code is None:
            others.append(ts_ms)
        else:
            entry[code] = min(entry[code], ts_ms)
    entries = np.sort(np.concatenate([entry, np.asarray(others, dtype=np.int64)]))
    times, sums, counts = schedule.steps()
    times = np.asarray(times, dtype=np.int64)
    sums = np.r_[0, np.asarray(sums, dtype=np.int64)]  # before the first step: none explicit
    counts = np.r_[0, np.asarray(counts, dtype=np.int64)]

    def share(at: np.ndarray) -> np.ndarray:
        topics = np.searchsorted(entries, at, side="right")
        step = np.searchsorted(times, at, side="right")
        # a topic without an explicit threshold is in the set and not counted in E: N - E >= 1
        return (schedule.total - sums[step]) // np.maximum(topics - counts[step], 1)

    final_at = np.full(n_topics, as_of_ms, dtype=np.int64)
    value, final_value = share(ts), share(final_at)
    explicit = np.zeros(len(ts), dtype=bool)
    final_explicit = np.zeros(n_topics, dtype=bool)
    intervals: dict[int, list[tuple[int, int | None, int]]] = {}
    for name, from_ms, to_ms, threshold in schedule.explicit_intervals():
        code = code_of.get(name)
        if code is not None:
            intervals.setdefault(code, []).append((from_ms, to_ms, threshold))
    if intervals:
        order = np.argsort(topic, kind="stable")
        bounds = np.r_[0, np.cumsum(np.bincount(topic, minlength=n_topics))]
        for code, spans in intervals.items():
            rows = order[bounds[code]:bounds[code + 1]]
            hit, threshold = _explicit_at(spans, ts[rows])
            value[rows[hit]] = threshold[hit]
            explicit[rows[hit]] = True
            hit, threshold = _explicit_at(spans, final_at[code:code + 1])
            if hit[0]:
                final_value[code], final_explicit[code] = threshold[0], True
    return BrokerThresholds(value, explicit, final_value, final_explicit)


def _explicit_at(spans: list[tuple[int, int | None, int]], at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Whether an explicit threshold of one topic is in force at each time of `at`, and its value
    (`spans`: disjoint `(from_ms, to_ms or None, threshold)` in time order)."""
    starts = np.array([s[0] for s in spans], dtype=np.int64)
    ends = np.array([_NEVER if s[1] is None else s[1] for s in spans], dtype=np.int64)
    open_ended = np.array([s[1] is None for s in spans], dtype=bool)
    values = np.array([s[2] for s in spans], dtype=np.int64)
    i = np.searchsorted(starts, at, side="right") - 1
    j = np.maximum(i, 0)
    hit = (i >= 0) & (open_ended[j] | (at < ends[j]))
    return hit, values[j]
