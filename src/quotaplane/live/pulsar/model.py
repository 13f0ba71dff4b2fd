"""What one collection round read from a Pulsar broker's admin API (docs/pulsar-live.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from quotaplane.backlog.config import QuotaSet

MAX_REASON_CHARS = 300


@dataclass(frozen=True)
class PulsarError:
    """A call or an answer that gave nothing usable: `reason` is an upper-case code (`UNREACHABLE`,
    `TIMEOUT`, `TLS_ERROR`, `UNAUTHORIZED`, `FORBIDDEN`, `NAMESPACE_NOT_FOUND`, `TOPIC_NOT_FOUND`,
    `NOT_FOUND`, `HTTP_ERROR`, `MALFORMED_ANSWER`, `EXCEPTION`), `where` what was being read, `message`
    why, from the broker's own words where it gave some."""

    reason: str
    where: str
    message: str

    def line(self) -> str:
        """One line: `REASON: where: message` (newlines folded, at most 300 characters of message)."""
        message = " ".join(self.message.split())
        if len(message) > MAX_REASON_CHARS:
            message = message[:MAX_REASON_CHARS - 3] + "..."
        return f"{self.reason}: {self.where}: {message}"

    def renamed(self, reason: str) -> PulsarError:
        return PulsarError(reason, self.where, self.message)


@dataclass(frozen=True)
class Position:
    """A managed-ledger position `ledger:entry` (entry -1: before the ledger's first entry)."""

    ledger: int
    entry: int


@dataclass(frozen=True)
class Ledger:
    """One ledger of a topic (`internal-info` `ledgers`): `close_ts_ms` is None while it is open."""

    ledger_id: int
    entries: int
    size_bytes: int
    close_ts_ms: int | None


@dataclass(frozen=True)
class SubscriptionBacklog:
    """One subscription of a topic as its stats gave it (`subscriptions.<name>`).

    `entries` is `msgBacklog` (Pulsar counts entries: `getNumberOfEntriesInBacklog`), `size_bytes` its
    `backlogSize` (`getEstimatedBacklogSize(markDeletePosition)`), `oldest_publish_ts_ms` its
    `earliestMsgPublishTimeInBacklog` (None when Pulsar gave none: `-1`), `oldest_ledger_close_ts_ms`
    the close time of the ledger holding its oldest unacknowledged entry (`internal-info`; None while
    that ledger is open or unknown)."""

    name: str
    entries: int
    size_bytes: int
    oldest_publish_ts_ms: int | None
    durable: bool
    oldest_ledger_close_ts_ms: int | None = None


@dataclass(frozen=True)
class TopicBacklog:
    """One persistent topic (or partition) as one round read it: its stats' PIP-323 fields and
    subscriptions. `observed_ms` is when its stats were asked for."""

    topic: str
    partitioned_topic: str | None
    observed_ms: int
    backlog_size_bytes: int
    limit_size: int
    limit_time: int
    oldest_age_seconds: int
    oldest_subscription: str | None
    producers: int
    subscriptions: tuple[SubscriptionBacklog, ...]


@dataclass(frozen=True)
class Collection:
    """One round over the watched namespaces.

    `broker` holds the broker's backlog-quota settings from its runtime configuration (None when it
    could not be read); `namespace_quotas` / `topic_quotas` the backlog quota maps set at each level
    (a partitioned topic's under its own name); `skipped` counts what was left out on purpose, by
    kind (`system topic`, `non-durable subscription`); `errors` every call that gave nothing usable.
    """

    ts_ms: int
    namespaces: tuple[str, ...]
    broker: Mapping[str, str] | None
    namespace_quotas: Mapping[str, QuotaSet]
    topic_quotas: Mapping[str, QuotaSet]
    topics: tuple[TopicBacklog, ...]
    skipped: Mapping[str, int] = field(default_factory=dict)
    errors: tuple[PulsarError, ...] = ()
