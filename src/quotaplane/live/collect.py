"""One collection round from a running cluster: DescribeCluster, then DescribeLogDirs (v4) of the
active brokers (spec: Cluster Volume Source).

A failed call makes a failed round with its reason (the spec's fallback factor applies). A log dir
reported with an error is left out; an active broker with no usable log dir is a broker without data
(the engine applies the fallback, reason MISSING_BROKER_DATA). A broker that leaves the active set
while it is the throttling broker (a full broker restarting) keeps its last observation for the
validity duration (the strimzi dialect's `throttle.factor.validity.duration`, else 5 minutes) instead
of releasing the throttle at once: the shipped plugin forgets it (strimzi/kafka-quotas-plugin).
"""

from __future__ import annotations

from quotaplane.live.admin import AdminError, ClusterAdmin
from quotaplane.storage.config import StorageConfig
from quotaplane.storage.engine.rounds import Round
from quotaplane.storage.engine.volume import Volume

DEFAULT_HOLD_MS = 5 * 60_000  # Strimzi's default throttle.factor.validity.duration (PT5M)


class KafkaCollector:
    def __init__(self, admin: ClusterAdmin, cluster: str, config: StorageConfig) -> None:
        self.admin = admin
        self.cluster = cluster
        self.hold_ms = config.validity_ns // 1_000_000 if config.validity_ns else DEFAULT_HOLD_MS
        self.last_seen: dict[int, tuple[int, tuple[Volume, ...]]] = {}

    def collect(self, poll_id: int, now_ms: int, throttling_broker: int | None) -> Round:
        def failed(reason: str) -> Round:
            return Round(self.cluster, poll_id, None, now_ms, (), None, reason)

        try:
            active = sorted(set(self.admin.active_brokers()))
        except AdminError as exc:
            return failed(exc.reason)
        try:
            dirs = self.admin.log_dirs(active)
        except AdminError as exc:
            return failed(exc.reason)
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
        return Round(self.cluster, poll_id, None, now_ms, tuple(volumes), frozenset(members), None)
