"""A collection round as `backlog_snapshots` rows, and the backlog policies it implies (pure functions).

Rows (docs/telemetry.md, `backlog_snapshots`): one per durable subscription of every topic read, all at
the round's time `ts_ms` (one round is one check tick):

| field | from |
|---|---|
| `ts_ms` | the round's time |
| `topic`, `partitioned_topic` | the topic; its partitioned topic when it is a partition of one |
| `subscription` | the subscription's name |
| `backlog_size_bytes` | its `backlogSize` (`getEstimatedBacklogSize(markDeletePosition)`) |
| `backlog_entries` | its `msgBacklog` (entries) |
| `oldest_unacked_publish_ts_ms` | its `earliestMsgPublishTimeInBacklog` (null when none) |
| `oldest_unacked_ledger_close_ts_ms` | close time of its ledger (`internal-info`; null while it is open) |

A row that breaks a row rule of the schema (Pulsar answered a backlog of entries with no oldest publish
time, as it does when the entries are acknowledged between its two reads) is left out and counted by
rule, as the readers would quarantine it; input = rows + dropped.

Policies (docs/backlog.md, the policies file): the broker's settings from its runtime configuration
(`backlogQuotaDefaultLimitBytes`, `...LimitSecond`, `...LimitGB`, `...RetentionPolicy`,
`backlogQuotaCheckIntervalInSeconds`, `preciseTimeBasedBacklogQuotaCheck`,
`exposeTopicLevelMetricsInPrometheus`, `clusterName`), each namespace's and each topic's backlog quota
map, checked by the same parser as a policies file (`parse_backlog_policies`).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from quotaplane.backlog.config import (
    DESTINATION_STORAGE,
    LIMIT_KEY,
    MESSAGE_AGE,
    BacklogPolicies,
    QuotaSet,
    parse_backlog_policies,
)
from quotaplane.backlog.engine.model import Snapshot
from quotaplane.backlog.records import BACKLOG_SNAPSHOTS
from quotaplane.core.errors import ConfigError, ConfigErrors
from quotaplane.live.pulsar.model import Collection, PulsarError


def snapshot_rows(collection: Collection) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The round's `backlog_snapshots` rows (topic, then subscription order) and the rows left out,
    counted by the schema rule they break."""
    rows: list[dict[str, Any]] = []
    dropped: Counter[str] = Counter()
    for topic in sorted(collection.topics, key=lambda t: t.topic):
        for sub in topic.subscriptions:
            row = {"ts_ms": collection.ts_ms, "topic": topic.topic, "subscription": sub.name,
                   "backlog_size_bytes": sub.size_bytes, "backlog_entries": sub.entries,
                   "oldest_unacked_publish_ts_ms": sub.oldest_publish_ts_ms,
                   "oldest_unacked_ledger_close_ts_ms": sub.oldest_ledger_close_ts_ms,
                   "partitioned_topic": topic.partitioned_topic}
            broken = BACKLOG_SNAPSHOTS.broken_rule(row)
            if broken is not None:
                dropped[broken.reason] += 1
            else:
                rows.append(row)
    return rows, dict(dropped)


def snapshots(collection: Collection) -> list[Snapshot]:
    """The round's rows as the reference engine's `Snapshot`s."""
    return [Snapshot.from_record(row) for row in snapshot_rows(collection)[0]]


def _quota_document(quotas: QuotaSet) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for quota_type in (DESTINATION_STORAGE, MESSAGE_AGE):
        quota = quotas.get(quota_type)
        if quota is not None:
            out[quota_type] = {LIMIT_KEY[quota_type]: quota.limit, "policy": quota.policy}
    return out


def policies_document(collection: Collection, broker: dict[str, Any] | None = None) -> dict[str, Any]:
    """The policies file (docs/backlog.md) the round implies; `broker` stands in for the broker's
    settings when the round could not read them."""
    settings = dict(collection.broker) if collection.broker is not None else dict(broker or {})
    return {"broker": settings,
            "namespaces": {ns: _quota_document(q) for ns, q in sorted(collection.namespace_quotas.items())},
            "topics": {t: _quota_document(q) for t, q in sorted(collection.topic_quotas.items())}}


def backlog_policies(collection: Collection, broker: dict[str, Any] | None = None
                     ) -> BacklogPolicies | PulsarError:
    """The backlog policies the round implies, or a `MALFORMED_ANSWER` naming every value the policies
    parser refused (a broker setting out of range, a namespace name it does not accept)."""
    try:
        return parse_backlog_policies(policies_document(collection, broker))
    except (ConfigError, ConfigErrors) as exc:
        problems = exc.errors if isinstance(exc, ConfigErrors) else [exc]
        return PulsarError("MALFORMED_ANSWER", "backlog policies", "; ".join(str(p) for p in problems))
