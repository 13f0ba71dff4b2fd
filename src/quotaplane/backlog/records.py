"""Backlog telemetry (Pulsar backlog quotas, PIP-323): one subscription's backlog at one check tick.

Each distinct `ts_ms` is a backlog-quota check tick (spec: Backlog Quota Eviction in the Broker).
A row says how big the subscription's backlog was, and which of its messages was the oldest
unacknowledged one: its publish time, and the close time of the ledger holding it (null while
that ledger is still open: then the estimate mode has no age). See docs/telemetry.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from quotaplane.backlog.names import (
    NAMESPACE_PATTERN_JAVA,
    TOPIC_PATTERN_JAVA,
    is_topic_name,
    namespace_of,
)
from quotaplane.core.policy import Input
from quotaplane.core.records import Field, RecordSchema, Rule

if TYPE_CHECKING:
    from pyspark.sql import Column


def _namespace(topic: Column) -> Column:
    from pyspark.sql import functions as F

    return F.regexp_extract(topic, NAMESPACE_PATTERN_JAVA, 1)


def _partitioned_topic_is_bad(row: dict) -> bool:
    parent = row["partitioned_topic"]
    if parent is None:
        return False
    if not is_topic_name(parent) or not is_topic_name(row["topic"]):
        return True
    return namespace_of(parent) != namespace_of(row["topic"])


BACKLOG_SNAPSHOTS = RecordSchema(
    name="backlog_snapshots",
    doc="One subscription of one persistent topic as one backlog-quota check tick saw it.",
    fields=(
        Field("ts_ms", "time_ms", doc="the check tick: when the snapshot was taken (epoch ms or ISO-8601)"),
        Field("topic", "string", doc="the topic (or partition): persistent://tenant/namespace/name"),
        Field("subscription", "string", doc="the subscription (cursor) name"),
        Field("backlog_size_bytes", "long", doc="the subscription's estimated backlog size in bytes"),
        Field("backlog_entries", "long", doc="unacknowledged entries in the subscription's backlog"),
        Field("oldest_unacked_publish_ts_ms", "time_ms", required=False,
              doc="publish time of the oldest unacknowledged message; null when the backlog is empty"),
        Field("oldest_unacked_ledger_close_ts_ms", "time_ms", required=False,
              doc="close time of the ledger holding that message; null (or <= 0) while the ledger is open"),
        Field("partitioned_topic", "string", required=False,
              doc="the partitioned topic this partition belongs to, when `topic` is a partition"),
    ),
    rules=(
        Rule("topic must be persistent://tenant/namespace/name",
             lambda c: ~c["topic"].rlike(TOPIC_PATTERN_JAVA),
             lambda r: not is_topic_name(r["topic"])),
        Rule("subscription must not be empty", lambda c: c["subscription"] == "",
             lambda r: r["subscription"] == ""),
        Rule("backlog_size_bytes must not be negative", lambda c: c["backlog_size_bytes"] < 0,
             lambda r: r["backlog_size_bytes"] < 0),
        Rule("backlog_entries must not be negative", lambda c: c["backlog_entries"] < 0,
             lambda r: r["backlog_entries"] < 0),
        Rule("backlog_entries > 0 exactly when oldest_unacked_publish_ts_ms is set",
             lambda c: (c["backlog_entries"] > 0) != c["oldest_unacked_publish_ts_ms"].isNotNull(),
             lambda r: (r["backlog_entries"] > 0) != (r["oldest_unacked_publish_ts_ms"] is not None)),
        Rule("partitioned_topic must be persistent://tenant/namespace/name in the same namespace",
             lambda c: c["partitioned_topic"].isNotNull() & (
                 ~c["partitioned_topic"].rlike(TOPIC_PATTERN_JAVA)
                 | (_namespace(c["partitioned_topic"]) != _namespace(c["topic"]))),
             _partitioned_topic_is_bad),
    ),
)

# Group rules, checked over all rows of a (tick, topic) after the row rules (same reasons in
# both engines): a subscription seen twice at one tick, or a topic whose rows disagree on
# `partitioned_topic`.
DUPLICATE_REASON = "duplicate snapshot of (ts_ms, topic, subscription)"
PARENT_CONFLICT_REASON = "rows of one (ts_ms, topic) disagree on partitioned_topic"

INPUTS = (Input("backlog_snapshots", BACKLOG_SNAPSHOTS,
                "backlog per topic and subscription (Pulsar backlog quotas)"),)
