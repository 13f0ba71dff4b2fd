"""Storage telemetry: what each collection round saw (volumes, partition replicas, active brokers,
failures).

Disk usage is modelled per partition replica (`retention.ReplicaSizes`): each replica holds what
was written to it (its topic's rate x its partition's share of the topic) minus what retention
deleted, in whole segments at Kafka's retention checks. A volume's used bytes are its non-Kafka
usage (a constant) plus the sizes of its replicas, so `partition_sizes` rows (DescribeLogDirs per
partition, every `partition_interval_ms`) sum exactly to what `volumes` reports, less that constant.

Generation runs over chunks of rounds; everything carried between chunks is an integer, so the
output does not depend on the chunk size.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from quotaplane.sim.kinds import strings, table
from quotaplane.sim.model import ERROR_REASONS, HOUR_MS, ClusterModel
from quotaplane.sim.rates import RateModel
from quotaplane.sim.retention import ReplicaSizes
from quotaplane.sim.rng import Fields


class StorageGenerator:
    """Chunks of `volumes`, `partition_sizes`, `membership` and `collection_errors` rows, round by round.

    A chunk holds at most `chunk_rows` rows of any kind (and bounds the per-replica arrays too).
    """

    def __init__(self, model: ClusterModel, fields: Fields, chunk_rows: int = 500_000,
                 partitions: bool = True) -> None:
        self.model = model
        self.fields = fields
        self.rates = RateModel(model, fields)
        self.replicas = ReplicaSizes(model, self.rates.expected_burst, fields)
        self.partitions = partitions  # whether to build `partition_sizes` tables
        self.every = model.partition_interval_ms // model.interval_ms  # rounds between partition rows
        n_vol = len(model.volumes.log_dir)
        self.chunk_rounds = max(1, min(chunk_rows // max(1, n_vol),
                                       chunk_rows * self.every // max(1, len(self.replicas))))

    def chunks(self) -> Iterator[dict[str, pa.Table]]:
        m = self.model
        for r0 in range(0, m.rounds, self.chunk_rounds):
            rounds = np.arange(r0, min(m.rounds, r0 + self.chunk_rounds), dtype=np.int64)
            nominal = m.start_ms + rounds * m.interval_ms
            writes = self.replicas.writes(rounds, self.rates.topic_rates(nominal, rounds))
            sizes = self.replicas.step(rounds, writes)
            used = m.volumes.base_used_bytes[None, :] + self.replicas.per_volume(sizes)
            available = np.clip(m.volumes.total_bytes[None, :] - used, 0, m.volumes.total_bytes[None, :])
            yield self._tables(rounds, nominal, available, sizes)

    def _tables(self, rounds: np.ndarray, nominal: np.ndarray, available: np.ndarray,
                sizes: np.ndarray) -> dict[str, pa.Table]:
        m, f = self.model, self.fields
        n_b = len(m.brokers.ids)
        ts = nominal + np.floor(f.uniform("jitter", rounds) * min(m.jitter_ms, m.interval_ms // 10)) \
            .astype(np.int64)
        reason = self._errors(rounds, nominal)  # -1 when the round succeeded
        absent, inconsistent = self._absent(rounds, nominal)
        missing = f.uniform("missing-broker", rounds[:, None], np.arange(n_b)[None, :]) \
            < m.collection.missing_broker_probability
        ok = reason < 0
        # describeCluster answered: the round succeeded, or only describeLogDirs failed.
        listed = ok | (reason == ERROR_REASONS.index("DESCRIBE_LOG_DIR_ERROR"))
        member = (~absent | inconsistent) & listed[:, None]
        observed_broker = ~absent & ~missing & ok[:, None]
        v = m.volumes
        observed = observed_broker[:, v.broker]
        ri, vi = np.nonzero(observed)
        n = len(ri)
        volumes = table("volumes", {
            "ts": pa.array(ts[ri]),
            "cluster": strings([m.cluster], np.zeros(n, dtype=np.int32)),
            "broker_id": pa.array(m.brokers.ids[v.broker[vi]]),
            "log_dir": strings(v.log_dir, vi),
            "total_bytes": pa.array(v.total_bytes[vi]),
            "available_bytes": pa.array(available[ri, vi]),
            "poll_id": pa.array(rounds[ri]),
        })
        mi, bi = np.nonzero(member)
        membership = table("membership", {
            "ts": pa.array(ts[mi]),
            "cluster": strings([m.cluster], np.zeros(len(mi), dtype=np.int32)),
            "broker_id": pa.array(m.brokers.ids[bi]),
            "poll_id": pa.array(rounds[mi]),
        })
        ei = np.flatnonzero(~ok)
        errors = table("collection_errors", {
            "ts": pa.array(ts[ei]),
            "reason": strings(list(ERROR_REASONS), reason[ei]),
            "cluster": strings([m.cluster], np.zeros(len(ei), dtype=np.int32)),
            "poll_id": pa.array(rounds[ei]),
        })
        out = {"volumes": volumes, "membership": membership, "collection_errors": errors}
        if self.partitions:
            with_space = observed & (available > 0)
            out["partition_sizes"] = self._partition_table(rounds, nominal, ts, with_space, sizes)
        return out

    def _partition_table(self, rounds: np.ndarray, nominal: np.ndarray, ts: np.ndarray,
                         observed: np.ndarray, sizes: np.ndarray) -> pa.Table:
        """One row per replica on each observed volume with space left, at partition rounds.

        A full volume's log dir is offline (Kafka fails it), so DescribeLogDirs lists no partitions
        for it; replicas of topics not created yet are not listed either.
        """
        m, rep = self.model, self.replicas
        at = np.flatnonzero(rounds % self.every == 0)
        listed = observed[at][:, rep.volume] & (nominal[at, None] >= m.topics.created_ms[rep.topic][None, :])
        ri, pi = np.nonzero(listed)
        v = m.volumes
        return table("partition_sizes", {
            "ts": pa.array(ts[at][ri]),
            "cluster": strings([m.cluster], np.zeros(len(ri), dtype=np.int32)),
            "broker_id": pa.array(m.brokers.ids[v.broker[rep.volume[pi]]]),
            "log_dir": strings(v.log_dir, rep.volume[pi]),
            "topic": strings(m.topics.names, rep.topic[pi]),
            "partition": pa.array(rep.partition[pi]),
            "size_bytes": pa.array(sizes[at][ri, pi]),
            "is_leader": pa.array(rep.leader[pi]),
        })

    def _absent(self, rounds: np.ndarray, nominal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(n, brokers): absent from the active set; listed although its log dirs are missing."""
        m = self.model
        absent = np.zeros((len(rounds), len(m.brokers.ids)), dtype=bool)
        inconsistent = np.zeros_like(absent)
        for a in m.brokers.absences:
            end = np.iinfo(np.int64).max if a.end_ms is None else a.end_ms
            absent[:, a.broker] |= (nominal >= a.start_ms) & (nominal < end)
            if a.inconsistent and a.start_ms > m.start_ms:
                first_round = -(-(a.start_ms - m.start_ms) // m.interval_ms)
                inconsistent[:, a.broker] |= rounds == first_round
        return absent, inconsistent & absent

    def _errors(self, rounds: np.ndarray, nominal: np.ndarray) -> np.ndarray:
        """The failure reason index of each round, or -1."""
        m, f, c = self.model, self.fields, self.model.collection
        weights = np.cumsum(c.reason_weights) / np.sum(c.reason_weights)
        reason = np.where(f.uniform("error", rounds) < c.error_probability,
                          np.searchsorted(weights, f.uniform("error-reason", rounds), side="right"), -1)
        hour = (nominal - m.start_ms) // HOUR_MS
        lo, hi = c.burst_rounds
        for h in (hour - 1, hour):  # a burst may run over into the next hour
            starts = m.start_ms + h * HOUR_MS + np.floor(f.uniform("error-burst-at", h) * HOUR_MS)
            length = lo + np.floor(f.uniform("error-burst-len", h) * (hi - lo + 1))
            inside = (f.uniform("error-burst", h) < c.burst_probability) & (nominal >= starts) \
                & (nominal < starts + np.minimum(length * m.interval_ms, HOUR_MS))
            burst_reason = np.searchsorted(weights, f.uniform("error-burst-reason", h), side="right")
            reason = np.where(inside, burst_reason, reason)
        for w in c.errors:
            reason = np.where((nominal >= w.start_ms) & (nominal < w.end_ms), ERROR_REASONS.index(w.reason),
                              reason)
        return np.minimum(reason, len(ERROR_REASONS) - 1)
