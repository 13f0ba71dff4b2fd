"""The reference engine's results as rows of the tables `quotaplane run` writes.

`backlog_checks`: one row per (tick, topic) (`CHECK_COLUMNS`, the Spark stage's column order);
`backlog_evictions`: one row per subscription an eviction run would evict (`EVICTION_COLUMNS`).
The differential tests compare exactly these rows with the Spark stage's tables.
"""

from __future__ import annotations

from typing import Any

from quotaplane.backlog.engine.model import TickResult

CHECK_COLUMNS = ("ts_ms", "topic", "namespace", "partitioned_topic", "backlog_size_bytes", "backlog_entries",
                 "backlog_age_seconds", "oldest_subscription", "size_limit", "time_limit", "size_policy",
                 "time_policy", "size_level", "time_level", "exceeded", "action", "producers", "eviction_run",
                 "size_evictions_total", "time_evictions_total")
EVICTION_COLUMNS = ("ts_ms", "topic", "quota_type", "subscription", "entries", "bytes")


def check_row(r: TickResult) -> dict[str, Any]:
    """The `backlog_checks` row of one tick of one topic."""
    q = r.quotas
    values = (r.ts_ms, r.topic, r.namespace, r.partitioned_topic, r.backlog_size_bytes, r.backlog_entries,
              r.backlog_age_seconds, r.oldest_subscription, q.size_limit, q.time_limit, q.size_policy,
              q.time_policy, q.size_level, q.time_level, r.exceeded, r.action, r.producers,
              r.eviction_run, r.size_evictions_total, r.time_evictions_total)
    return dict(zip(CHECK_COLUMNS, values, strict=True))


def eviction_rows(r: TickResult) -> list[dict[str, Any]]:
    """The `backlog_evictions` rows of one tick of one topic (none unless it ran an eviction)."""
    return [dict(zip(EVICTION_COLUMNS, (r.ts_ms, r.topic, r.exceeded, e.subscription, e.entries, e.bytes),
                     strict=True))
            for e in r.evictions]
