"""A round from a running Kafka cluster's Admin API: DescribeCluster, then Metadata and
DescribeLogDirs (v4) of the active brokers (spec: strimzi-cluster-wide-volume-quotas, "Cluster
Volume Source"), as the `membership`, `volumes`, `collection_errors` and `partition_sizes` rows of
docs/telemetry.md, marked with the round number as `poll_id`.

- A failed DescribeCluster or DescribeLogDirs call makes a failed round: one `collection_errors`
  row with its reason (the spec's fallback factor applies).
- A log dir reported with an error, or without its volume sizes, gives no `volumes` row: an active
  broker with no usable log dir is a broker without data (the engine applies the fallback, reason
  missing_broker_data). The broker's answers are passed on as they are; the service leaves out the
  rows the readers' rules reject (usable > total, a zero-capacity volume), so the live round and the
  batch run over the landed rows see the same volumes.
- A broker that leaves the active set while it is the throttling broker (a full broker restarting)
  keeps its last observation for the validity duration (the strimzi dialect's
  `throttle.factor.validity.duration`, else 5 minutes): its membership and volume rows are repeated
  at the round's time, instead of releasing the throttle at once as the shipped plugin does
  (strimzi/kafka-quotas-plugin issues #38, #40).
- Every current replica of a healthy log dir of an active broker is a `partition_sizes` row, its
  `is_leader` from the round's Metadata (null when no leader is known).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from quotaplane.core.live import Outcome
from quotaplane.live.admin import AdminError, ClusterAdmin, LogDir
from quotaplane.live.sources import Observation
from quotaplane.storage.config import StorageConfig
from quotaplane.storage.live import throttling_broker

DEFAULT_HOLD_MS = 5 * 60_000  # Strimzi's default throttle.factor.validity.duration (PT5M)
INPUTS = ("volumes", "membership", "collection_errors", "partition_sizes")


class KafkaSource:
    """The storage inputs of a Kafka cluster, a round at a time."""

    name = "kafka"
    inputs = INPUTS

    def __init__(self, admin: ClusterAdmin, cluster: str, config: StorageConfig) -> None:
        self.admin = admin
        self.cluster = cluster
        self.hold_ms = config.validity_ns // 1_000_000 if config.validity_ns else DEFAULT_HOLD_MS
        self.last_seen: dict[int, tuple[int, list[LogDir]]] = {}  # broker -> (time, its usable dirs)

    def observe(self, number: int, now_ms: int, last: Mapping[str, Outcome]) -> Observation:
        base = {"ts": now_ms, "cluster": self.cluster, "poll_id": number}
        try:
            active = sorted(set(self.admin.active_brokers()))
            dirs = self.admin.log_dirs(active)
        except AdminError as exc:
            return Observation({"collection_errors": [{**base, "reason": exc.reason}]},
                               [f"{exc.reason}: {exc.message}"])
        usable = [d for d in dirs if d.error is None and d.total_bytes is not None
                  and d.usable_bytes is not None]
        for broker in {d.broker_id for d in usable}:
            self.last_seen[broker] = (now_ms, [d for d in usable if d.broker_id == broker])
        members = list(active)
        held = throttling_broker(last)
        seen = self.last_seen.get(held) if held is not None else None
        if held is not None and held not in members and seen is not None and now_ms - seen[0] <= self.hold_ms:
            members.append(held)
            usable.extend(seen[1])
        errors = [f"{d.error} (broker {d.broker_id}{', ' + d.log_dir if d.log_dir else ''})"
                  for d in dirs if d.error is not None]
        rows: dict[str, list[dict[str, Any]]] = {
            "membership": [{**base, "broker_id": b} for b in sorted(members)],
            "volumes": [{**base, "broker_id": d.broker_id, "log_dir": d.log_dir, "total_bytes": d.total_bytes,
                         "available_bytes": d.usable_bytes} for d in usable],
            "partition_sizes": [
                {"ts": now_ms, "cluster": self.cluster, "broker_id": d.broker_id, "log_dir": d.log_dir,
                 "topic": r.topic, "partition": r.partition, "size_bytes": r.size_bytes,
                 "is_leader": r.is_leader}
                for d in dirs if d.error is None and d.broker_id in active for r in d.replicas],
        }
        return Observation(rows, errors)

    def close(self) -> None:
        self.admin.close()
