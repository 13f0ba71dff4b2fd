"""Storage telemetry: what each collection round saw (volumes, active brokers, failures).

Disk usage of a volume = its base usage + for each retention class the bytes retained at the start,
plus the bytes written since (its topics' rates x the share of their replicas the volume holds,
i.e. bytes-in x replication factor), minus retention deletes. Kafka deletes whole segments at its
retention checks (every 5 minutes): at a check at time t it has deleted every whole segment of
what was written before t - retention. Before the start, writing is taken to have run at the mean
rate, so a cluster starts in its steady state.

Generation runs over chunks of rounds; the only state carried between chunks is the cumulative
bytes written per (retention class, volume) and those cumulative bytes at the past retention
checks that are still within the longest retention (bounded, whatever the run length). Every
cumulative quantity is an integer, so the output does not depend on the chunk size.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from quotaplane.sim.kinds import strings, table
from quotaplane.sim.model import ERROR_REASONS, HOUR_MS, ClusterModel
from quotaplane.sim.rates import RateModel
from quotaplane.sim.rng import Fields


class _Retention:
    """Retention classes: topics grouped by retention time (0 = never deleted by time)."""

    def __init__(self, model: ClusterModel, expected_burst: np.ndarray) -> None:
        t = model.topics
        check = model.retention_check_ms
        self.values = np.array(sorted({int(r) for r in t.retention_ms if r > 0}), dtype=np.int64)
        self.ticks = np.maximum(1, np.rint(self.values / check).astype(np.int64))  # retention in checks
        self.topic_class = np.full(len(t), -1)
        for k, value in enumerate(self.values):
            self.topic_class[t.retention_ms == value] = k
        existing = t.created_ms <= model.start_ms
        n_vol = len(model.volumes.log_dir)
        self.mean_rate = np.zeros((len(self.values), n_vol))  # bytes per ms written before the start
        self.segment = np.ones((len(self.values), 1), dtype=np.int64)
        for k in range(len(self.values)):
            members = (self.topic_class == k)
            old = members & existing
            self.mean_rate[k] = (t.base_rate[old] * expected_burst[old] / 1000.0) @ t.placement[old]
            self.segment[k, 0] = int(np.median(t.segment_bytes[members]))
        # Bytes retained at the start: what the mean rate wrote during one retention.
        self.initial = np.floor(self.mean_rate * (self.ticks * check)[:, None]).astype(np.int64)


class StorageGenerator:
    """Chunks of `volumes`, `membership` and `collection_errors` rows, round by round."""

    def __init__(self, model: ClusterModel, fields: Fields, chunk_rows: int = 500_000) -> None:
        self.model = model
        self.fields = fields
        self.rates = RateModel(model, fields)
        self.retention = _Retention(model, self.rates.expected_burst)
        n_vol = len(model.volumes.log_dir)
        self.chunk_rounds = max(1, chunk_rows // max(1, n_vol))

    def chunks(self) -> Iterator[dict[str, pa.Table]]:
        m = self.model
        ret = self.retention
        n_vol = len(m.volumes.log_dir)
        written = np.zeros((len(ret.values), n_vol), dtype=np.int64)
        never_deleted = np.zeros(n_vol, dtype=np.int64)
        # Cumulative bytes at retention checks: history[j - history_start] is the value at check j.
        history = np.zeros((0, len(ret.values), n_vol), dtype=np.int64)
        history_start = 0
        for r0 in range(0, m.rounds, self.chunk_rounds):
            r1 = min(m.rounds, r0 + self.chunk_rounds)
            rounds = np.arange(r0, r1, dtype=np.int64)
            nominal = m.start_ms + rounds * m.interval_ms
            writes_by_class, writes_never = self._writes(rounds, nominal)
            cumulative = written[None] + np.cumsum(writes_by_class, axis=0)
            cumulative_never = never_deleted[None] + np.cumsum(writes_never, axis=0)
            written, never_deleted = cumulative[-1], cumulative_never[-1]
            # Record the cumulative bytes at the checks whose last round falls in this chunk.
            check, interval = m.retention_check_ms, m.interval_ms
            j_first, j_end = -(-r0 * interval // check), -(-r1 * interval // check)
            aligned = (np.arange(j_first, j_end) * check) // interval
            history = np.concatenate([history, cumulative[aligned - r0]])
            deleted = self._deleted(rounds, history, history_start)
            keep_from = max(history_start, (r1 * interval) // check - int(ret.ticks.max(initial=0)) - 1)
            history = history[keep_from - history_start:]
            history_start = keep_from
            used = (m.volumes.base_used_bytes[None, :] + cumulative_never
                    + (ret.initial[None] + cumulative - deleted).sum(axis=1))
            available = np.clip(m.volumes.total_bytes[None, :] - used, 0, m.volumes.total_bytes[None, :])
            yield self._tables(rounds, nominal, available)

    def _writes(self, rounds: np.ndarray, nominal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Bytes written to each volume during each round's interval, by retention class."""
        m, ret = self.model, self.retention
        rates = self.rates.topic_rates(nominal, rounds)  # (n, topics) bytes/s
        seconds = m.interval_ms / 1000.0
        first = rounds == 0  # the start is the state before any round's writes
        by_class = np.zeros((len(rounds), len(ret.values), len(m.volumes.log_dir)), dtype=np.int64)
        for k in range(len(ret.values)):
            members = ret.topic_class == k
            by_class[:, k, :] = np.floor(rates[:, members] @ m.topics.placement[members] * seconds)
        never = ret.topic_class < 0
        never_deleted = np.floor(rates[:, never] @ m.topics.placement[never] * seconds).astype(np.int64)
        by_class[first] = 0
        never_deleted[first] = 0
        return by_class, never_deleted

    def _deleted(self, rounds: np.ndarray, history: np.ndarray, history_start: int) -> np.ndarray:
        """(n, classes, volumes): bytes deleted by retention up to each round (whole segments)."""
        m, ret = self.model, self.retention
        check = m.retention_check_ms
        last_check = (rounds * m.interval_ms) // check  # the latest check at or before each round
        deleted = np.zeros((len(rounds), len(ret.values), len(m.volumes.log_dir)), dtype=np.int64)
        for k in range(len(ret.values)):
            past = last_check - ret.ticks[k]  # the check one retention earlier
            before_start = past < 0
            # Before the start the mean rate applied: cumulative bytes are negative there.
            extrapolated = np.floor(ret.mean_rate[k][None, :] * (past[:, None] * check)).astype(np.int64)
            recorded = history[np.clip(past - history_start, 0, max(0, len(history) - 1)), k] \
                if len(history) else np.zeros_like(extrapolated)
            at_past = np.where(before_start[:, None], extrapolated, recorded)
            expired = np.maximum(0, ret.initial[k][None, :] + at_past)
            deleted[:, k, :] = (expired // ret.segment[k]) * ret.segment[k]
        return deleted

    def _tables(self, rounds: np.ndarray, nominal: np.ndarray, available: np.ndarray) -> dict[str, pa.Table]:
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
        return {"volumes": volumes, "membership": membership, "collection_errors": errors}

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
