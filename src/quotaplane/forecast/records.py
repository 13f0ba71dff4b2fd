"""Forecast telemetry: the size of every partition replica, as DescribeLogDirs reports it.

One row is one replica of one partition on one log dir of one broker at one collection round
(`DescribeLogDirsResponse` v4: `partitionSize`, `isFutureKey`; the leader flag comes from the
topic metadata when the collector has it). See docs/telemetry.md and docs/forecast.md.
"""

from __future__ import annotations

from quotaplane.core.policy import Input
from quotaplane.core.records import Field, RecordSchema, Rule

PARTITION_SIZES = RecordSchema(
    name="partition_sizes",
    doc="One partition replica on one log dir as one collection round observed it.",
    fields=(
        Field("ts", "time_ms", doc="when the round observed the replica (epoch ms or ISO-8601)"),
        Field("cluster", "string", doc="the Kafka cluster the broker belongs to"),
        Field("broker_id", "long", doc="the broker holding the replica"),
        Field("log_dir", "string", doc="the log dir holding the replica"),
        Field("topic", "string", doc="the topic"),
        Field("partition", "long", doc="the partition index"),
        Field("size_bytes", "long", doc="the replica's size on disk (DescribeLogDirs partitionSize)"),
        Field("is_leader", "bool", required=False,
              doc="whether this replica is the partition's leader, when the collector knows it"),
    ),
    rules=(
        Rule("size_bytes must not be negative", lambda c: c["size_bytes"] < 0,
             lambda r: r["size_bytes"] < 0),
        Rule("partition must not be negative", lambda c: c["partition"] < 0,
             lambda r: r["partition"] < 0),
        Rule("log_dir must not be empty", lambda c: c["log_dir"] == "", lambda r: r["log_dir"] == ""),
        Rule("topic must not be empty", lambda c: c["topic"] == "", lambda r: r["topic"] == ""),
    ),
)

INPUTS = (
    Input("partition_sizes", PARTITION_SIZES,
          "per-partition replica sizes (forecast: growth by topic)", required=False),
)
