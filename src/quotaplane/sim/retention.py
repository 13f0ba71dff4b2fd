"""Per-replica disk usage: what each partition replica holds, round by round.

Replica i (of topic t, partition p) at round r holds

    size_i(r) = initial_i + written_i(r) - deleted_i(r)
    written_i(r) = Σ_{0<j≤r} floor(rate_t(j) × weight_p × interval)       (every replica of p alike)
    deleted_i(r) = segment_t × floor(max(0, initial_i + written_i(c(r) − R_t)) / segment_t)

`c(r)` is the last retention check at or before round r: at a check Kafka has deleted every whole
segment written more than R_t ago. Before the start the topic is taken to have written at its mean
rate (bursts included), so `written` extrapolates linearly into the past and a replica starts in
its steady state: `initial_i` is one retention of the mean rate plus a part of a segment (uniform
in [0, segment): where the replica is in its segment cycle), so the replicas of a volume do not
delete in step. Topics without time retention (R = 0) never delete; they start with their age's
writes. Topics created during the run start empty.

Only the cumulative bytes per replica and, per retention class (replicas of topics with the same
retention), their values at the past checks within that retention are carried between chunks:
memory is bounded whatever the span. Every quantity is an integer, so chunking never changes a
value.
"""

from __future__ import annotations

import numpy as np

from quotaplane.sim.model import ClusterModel
from quotaplane.sim.rng import Fields


class _Class:
    """The replicas of one retention time, and their cumulative bytes at past checks."""

    def __init__(self, members: np.ndarray, ticks: int, mean: np.ndarray, initial: np.ndarray,
                 segment: np.ndarray) -> None:
        self.members = members  # replica positions
        self.ticks = ticks  # retention, in checks
        self.mean = mean  # bytes per ms written before the start
        self.initial = initial
        self.segment = segment
        self.history = np.zeros((0, len(members)), dtype=np.int64)  # history[j - start]: at check j
        self.start = 0

    def deleted(self, last_check: np.ndarray, check_ms: int) -> np.ndarray:
        """(n, members): bytes deleted by retention up to rounds whose last check is `last_check`."""
        past = last_check - self.ticks  # the check one retention earlier
        # Before the start the mean rate applied: cumulative bytes are negative there.
        extrapolated = np.floor(self.mean[None, :] * (past[:, None] * check_ms)).astype(np.int64)
        if len(self.history):
            recorded = self.history[np.clip(past - self.start, 0, len(self.history) - 1)]
            at_past = np.where((past < 0)[:, None], extrapolated, recorded)
        else:
            at_past = extrapolated
        expired = np.maximum(0, self.initial[None, :] + at_past)
        return (expired // self.segment) * self.segment

    def record(self, cumulative: np.ndarray, first_check: int) -> None:
        """Append the cumulative bytes at checks `first_check, first_check + 1, ...`."""
        assert first_check == self.start + len(self.history)
        self.history = np.concatenate([self.history, cumulative[:, self.members]])

    def forget(self, keep_from: int) -> None:
        """Drop the checks before `keep_from` (no later round looks that far back)."""
        keep_from = max(self.start, keep_from)
        self.history = self.history[keep_from - self.start:]
        self.start = keep_from


class ReplicaSizes:
    """The size of every replica at each round of consecutive chunks of rounds.

    Replicas are ordered by (volume, topic, partition); `order` maps that order to the model's.
    """

    def __init__(self, model: ClusterModel, expected_burst: np.ndarray, fields: Fields) -> None:
        t, r = model.topics, model.topics.replicas
        self.model = model
        self.order = np.lexsort((r.partition, r.topic, r.volume))
        self.topic, self.partition = r.topic[self.order], r.partition[self.order]
        self.volume, self.leader = r.volume[self.order], r.leader[self.order]
        self.weight = r.weight[self.order]
        n_vol = len(model.volumes.log_dir)
        self.bounds = np.searchsorted(self.volume, np.arange(n_vol + 1))  # replicas of volume v: [b_v, b_v+1)
        existing = t.created_ms[self.topic] <= model.start_ms
        retention, segment = t.retention_ms[self.topic], t.segment_bytes[self.topic]
        check = model.retention_check_ms
        ticks = np.maximum(1, np.rint(retention / check).astype(np.int64))
        mean = t.base_rate[self.topic] * expected_burst[self.topic] / 1000.0 * self.weight * existing
        phase = np.floor(fields.uniform("segment-phase", np.arange(len(self.topic))) * segment)
        timed = retention > 0
        self.initial = np.where(
            timed, np.floor(mean * ticks * check) + phase * existing,
            np.floor(t.age_ms[self.topic] * t.base_rate[self.topic] / 1000.0 * self.weight) * existing,
        ).astype(np.int64)
        self.classes = [
            _Class(members, int(ticks[members[0]]), mean[members], self.initial[members], segment[members])
            for value in np.unique(retention[timed])
            for members in [np.flatnonzero(retention == value)]
        ]
        self.written = np.zeros(len(self.topic), dtype=np.int64)

    def __len__(self) -> int:
        return len(self.topic)

    def writes(self, rounds: np.ndarray, topic_rates: np.ndarray) -> np.ndarray:
        """(n, replicas): bytes written to each replica during each round's interval (none at round 0)."""
        seconds = self.model.interval_ms / 1000.0
        out = np.floor(topic_rates[:, self.topic] * (self.weight * seconds)[None, :]).astype(np.int64)
        out[rounds == 0] = 0  # the start is the state before any round's writes
        return out

    def step(self, rounds: np.ndarray, writes: np.ndarray) -> np.ndarray:
        """(n, replicas) sizes at `rounds` (the chunk after the previous one), given their writes."""
        m = self.model
        check, interval = m.retention_check_ms, m.interval_ms
        r0, r1 = int(rounds[0]), int(rounds[-1]) + 1
        cumulative = self.written[None, :] + np.cumsum(writes, axis=0)
        self.written = cumulative[-1]
        sizes = self.initial[None, :] + cumulative
        # The checks whose last round falls in this chunk, and the latest check of each round.
        j_first, j_end = -(-r0 * interval // check), -(-r1 * interval // check)
        at_checks = cumulative[(np.arange(j_first, j_end) * check) // interval - r0]
        last_check = (rounds * interval) // check
        for c in self.classes:
            c.record(at_checks, j_first)
            sizes[:, c.members] -= c.deleted(last_check, check)
            c.forget((r1 * interval) // check - c.ticks - 1)
        return sizes

    def per_volume(self, sizes: np.ndarray) -> np.ndarray:
        """(n, volumes): the sum of the sizes of each volume's replicas."""
        running = np.zeros((len(sizes), len(self.topic) + 1), dtype=np.int64)
        np.cumsum(sizes, axis=1, out=running[:, 1:])
        return running[:, self.bounds[1:]] - running[:, self.bounds[:-1]]
