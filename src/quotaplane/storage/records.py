"""Storage telemetry: volume observations, active-broker membership, collection errors.

A collection round is what one poll of the cluster saw (Strimzi: `describeCluster` then
`describeLogDirs`). Rows of one round share `poll_id` when the collector marks rounds; without
`poll_id`, rounds are the storage check intervals (see docs/telemetry.md).
"""

from __future__ import annotations

from quotaplane.core.policy import Input
from quotaplane.core.records import Field, RecordSchema, Rule

VOLUMES = RecordSchema(
    name="volumes",
    doc="One log dir of one broker as one collection round observed it (KIP-827 total/usable bytes).",
    fields=(
        Field("ts", "time_ms", doc="when the round observed the volume (epoch ms or ISO-8601)"),
        Field("cluster", "string", doc="the Kafka cluster the broker belongs to"),
        Field("broker_id", "long", doc="the broker (node) id"),
        Field("log_dir", "string", doc="the log dir path"),
        Field("total_bytes", "long", doc="total bytes of the volume holding the log dir"),
        Field("available_bytes", "long", doc="usable bytes left on that volume"),
        Field("poll_id", "long", required=False, doc="the collection round, when rounds are marked"),
    ),
    rules=(
        # a volume of no capacity is a reporting fault (KIP-827: the size of the log dir's volume), not
        # a full disk: it would otherwise throttle every producer to 1 byte/s
        Rule("total_bytes must be positive", lambda c: c["total_bytes"] <= 0,
             lambda r: r["total_bytes"] <= 0),
        Rule("available_bytes must not be negative", lambda c: c["available_bytes"] < 0,
             lambda r: r["available_bytes"] < 0),
        Rule("available_bytes must not exceed total_bytes",
             lambda c: c["available_bytes"] > c["total_bytes"],
             lambda r: r["available_bytes"] > r["total_bytes"]),
        Rule("log_dir must not be empty", lambda c: c["log_dir"] == "",
             lambda r: r["log_dir"] == ""),
    ),
)

MEMBERSHIP = RecordSchema(
    name="membership",
    doc="One broker that `describeCluster` reported active in one collection round.",
    fields=(
        Field("ts", "time_ms", doc="when the round listed the active brokers"),
        Field("cluster", "string"),
        Field("broker_id", "long", doc="an active broker"),
        Field("poll_id", "long", required=False, doc="the collection round, when rounds are marked"),
    ),
)

COLLECTION_ERRORS = RecordSchema(
    name="collection_errors",
    doc="A collection round that failed (no usable observation), with the failure reason.",
    fields=(
        Field("ts", "time_ms", doc="when the round failed"),
        Field("reason", "string", doc="e.g. DESCRIBE_CLUSTER_ERROR, DESCRIBE_LOG_DIR_ERROR, SAFETY_TIMEOUT"),
        Field("cluster", "string", required=False),
        Field("poll_id", "long", required=False),
    ),
    rules=(
        Rule("reason must not be empty", lambda c: c["reason"] == "", lambda r: r["reason"] == ""),
    ),
)

# The storage policy's inputs: volumes are required, the other two are empty when absent.
INPUTS = (
    Input("volumes", VOLUMES, "per-volume disk observations (storage quotas)"),
    Input("membership", MEMBERSHIP, "active brokers per collection round (storage quotas)", required=False),
    Input("collection_errors", COLLECTION_ERRORS, "failed collection rounds (storage quotas)",
          required=False),
)
