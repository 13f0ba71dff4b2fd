"""The values the backlog-quota engine reads and produces."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SIZE = "size"  # exceeded quota type destination_storage; the `quota_type` label value
TIME = "time"  # exceeded quota type message_age


@dataclass(frozen=True)
class Snapshot:
    """One subscription of one topic at one check tick (telemetry `backlog_snapshots`)."""

    ts_ms: int
    topic: str
    subscription: str
    backlog_size_bytes: int
    backlog_entries: int
    oldest_unacked_publish_ts_ms: int | None = None
    oldest_unacked_ledger_close_ts_ms: int | None = None
    partitioned_topic: str | None = None

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Snapshot:
        return cls(*map(record.get, _SNAPSHOT_FIELDS))


_SNAPSHOT_FIELDS = tuple(Snapshot.__dataclass_fields__)


@dataclass(frozen=True)
class ResolvedQuotas:
    """The quotas in force for a topic, each from the most specific level that sets it."""

    size_limit: int
    size_policy: str
    size_level: str  # topic | namespace | broker
    time_limit: int
    time_policy: str
    time_level: str


@dataclass(frozen=True)
class Eviction:
    """What one eviction run would evict from one subscription (an estimate: docs/backlog.md)."""

    subscription: str
    entries: int
    bytes: int

    def as_dict(self) -> dict[str, Any]:
        return {"subscription": self.subscription, "entries": self.entries, "bytes": self.bytes}


@dataclass(frozen=True)
class TickResult:
    """The backlog-quota check of one topic at one tick."""

    ts_ms: int
    topic: str
    namespace: str
    partitioned_topic: str | None
    backlog_size_bytes: int
    backlog_entries: int
    backlog_age_seconds: int | None
    oldest_subscription: str | None
    quotas: ResolvedQuotas
    exceeded: str | None  # size | time | None
    action: str | None  # the policy in force for the exceeded quota
    producers: str | None  # held | failed | None
    evictions: tuple[Eviction, ...] = field(default=())
    size_evictions_total: int = 0  # eviction runs so far (this tick included), per quota type
    time_evictions_total: int = 0

    @property
    def eviction_run(self) -> bool:
        return self.action == "consumer_backlog_eviction"

    def as_dict(self) -> dict[str, Any]:
        """The CLI's JSON line (the first ten keys are the stable contract)."""
        q = self.quotas
        return {
            "ts": self.ts_ms,
            "topic": self.topic,
            "backlog_size_bytes": self.backlog_size_bytes,
            "backlog_age_seconds": self.backlog_age_seconds,
            "oldest_subscription": self.oldest_subscription,
            "size_limit": q.size_limit,
            "time_limit": q.time_limit,
            "exceeded": self.exceeded,
            "action": self.action,
            "producers": self.producers,
            "namespace": self.namespace,
            "partitioned_topic": self.partitioned_topic,
            "backlog_entries": self.backlog_entries,
            "size_policy": q.size_policy,
            "time_policy": q.time_policy,
            "evictions": [e.as_dict() for e in self.evictions],
            "size_evictions_total": self.size_evictions_total,
            "time_evictions_total": self.time_evictions_total,
        }


@dataclass(frozen=True)
class TopicStats:
    """The PIP-323 fields of the topic stats (`{tenant}/{namespace}/{topic}/stats`)."""

    backlogQuotaLimitSize: int  # Pulsar's JSON field names
    backlogQuotaLimitTime: int
    oldestBacklogMessageAgeSeconds: int
    oldestBacklogMessageSubscriptionName: str | None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)
