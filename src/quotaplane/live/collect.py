"""One collection round from a running cluster: DescribeCluster, then DescribeLogDirs (v4) of the
active brokers (spec: Cluster Volume Source).

A failed call makes a failed round with its reason (the spec's fallback factor applies). A log dir
reported with an error is left out; an active broker with no usable log dir is a broker without data
(the engine applies the fallback, reason MISSING_BROKER_DATA). A broker that leaves the active set
while it is the throttling broker (a full broker restarting) keeps its last observation for the
validity duration (the strimzi dialect's `throttle.factor.validity.duration`, else 5 minutes) instead
of releasing the throttle at once: the shipped plugin forgets it (strimzi/kafka-quotas-plugin).

The same DescribeLogDirs answers give the forecast's `partition_sizes` rows (`Collected.replicas`:
every replica of a healthy log dir of an active broker, at the round's time). A replica that breaks
a row rule of that schema (a negative size, a negative partition, an empty topic) is left out and
counted by rule in `Collected.dropped` (the round goes on), as the batch readers would reject it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from quotaplane.forecast.engine.replicas import ReplicaPoint
from quotaplane.forecast.engine.volumes import VolumePoint
from quotaplane.forecast.records import PARTITION_SIZES
from quotaplane.live.admin import AdminError, ClusterAdmin, LogDir
from quotaplane.storage.config import StorageConfig
from quotaplane.storage.engine.rounds import Round
from quotaplane.storage.engine.volume import Volume

DEFAULT_HOLD_MS = 5 * 60_000  # Strimzi's default throttle.factor.validity.duration (PT5M)


@dataclass(frozen=True)
class Collected:
    """One round from a source with what the forecast takes from it: the partition replica sizes
    observed, the volume observations (None: the round's own, as landed) and the replicas left out
    (by rule)."""

    round: Round
    replicas: tuple[ReplicaPoint, ...] = ()
    volumes: tuple[VolumePoint, ...] | None = None
    dropped: Mapping[str, int] = field(default_factory=dict)


class KafkaCollector:
    def __init__(self, admin: ClusterAdmin, cluster: str, config: StorageConfig) -> None:
        self.admin = admin
        self.cluster = cluster
        self.hold_ms = config.validity_ns // 1_000_000 if config.validity_ns else DEFAULT_HOLD_MS
        self.last_seen: dict[int, tuple[int, tuple[Volume, ...]]] = {}

    def _replicas(self, dirs: list[LogDir], active: set[int],
                  now_ms: int) -> tuple[tuple[ReplicaPoint, ...], Counter[str]]:
        """The round's `partition_sizes` rows, and the replicas left out by rule."""
        kept: list[ReplicaPoint] = []
        dropped: Counter[str] = Counter()
        for d in dirs:
            if d.error is not None or d.broker_id not in active:
                continue
            for r in d.replicas:
                row = {"ts": now_ms, "cluster": self.cluster, "broker_id": d.broker_id, "log_dir": d.log_dir,
                       "topic": r.topic, "partition": r.partition, "size_bytes": r.size_bytes,
                       "is_leader": r.is_leader}
                broken = PARTITION_SIZES.broken_rule(row)
                if broken is not None:
                    dropped[broken.reason] += 1
                else:
                    kept.append(ReplicaPoint.from_record(row))
        return tuple(kept), dropped

    def collect(self, poll_id: int, now_ms: int, throttling_broker: int | None) -> Collected:
        def failed(reason: str) -> Collected:
            return Collected(Round(self.cluster, poll_id, None, now_ms, (), None, reason))

        try:
            active = sorted(set(self.admin.active_brokers()))
        except AdminError as exc:
            return failed(exc.reason)
        try:
            dirs = self.admin.log_dirs(active)
        except AdminError as exc:
            return failed(exc.reason)
        replicas, dropped = self._replicas(dirs, set(active), now_ms)
        by_broker: dict[int, list[Volume]] = {}
        for d in dirs:
            if d.error is None and d.total_bytes is not None and d.usable_bytes is not None:
                by_broker.setdefault(d.broker_id, []).append(
                    Volume(d.broker_id, d.log_dir, d.total_bytes, d.usable_bytes))
        for broker, volumes in by_broker.items():
            self.last_seen[broker] = (now_ms, tuple(volumes))
        members = set(active)
        volumes = [v for b in active for v in by_broker.get(b, [])]
        held = self.last_seen.get(throttling_broker) if throttling_broker is not None else None
        if throttling_broker not in members and held is not None and now_ms - held[0] <= self.hold_ms:
            members.add(throttling_broker)  # type: ignore[arg-type]
            volumes.extend(held[1])
        rd = Round(self.cluster, poll_id, None, now_ms, tuple(volumes), frozenset(members), None)
        return Collected(rd, replicas, None, dict(dropped))
