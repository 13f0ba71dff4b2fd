"""Producer traffic: one publish request a broker read from a producer's connection.

spec: pip-385-producer-throttle-protocol (Background knowledge: the limits a publish is checked
against); docs/notices.md (Input) has the fields and their rules. Topic names follow Pulsar's
`TopicName`: a full name `persistent://tenant/ns/local`, a short `tenant/ns/local` or a single `local`.
"""

from __future__ import annotations

import re

from quotaplane.core.policy import Input
from quotaplane.core.records import Field, RecordSchema, Rule

DEFAULT_DOMAIN = "persistent"
DEFAULT_NAMESPACE = "public/default"
_NAME = r"[-=:.A-Za-z0-9_]+"  # Pulsar's `NamedEntity` rule for tenants and namespaces (ASCII \w)
_TOPIC = (rf"(?:(?:persistent|non-persistent)://{_NAME}/{_NAME}/[^/]+|{_NAME}/{_NAME}/[^/]+|[^/:]+)")
_TOPIC_RE = re.compile(_TOPIC)
_TOPIC_JAVA = rf"^{_TOPIC}\z"
TOPIC_RULE = ("topic must be persistent://tenant/namespace/local, non-persistent://tenant/namespace/local, "
              "tenant/namespace/local or a single name without '/' and ':'")
_PARTITION = re.compile(r"-partition-[0-9]+\Z")


def is_legal_topic(name: str) -> bool:
    """Pulsar's topic name forms (`TOPIC_RULE`)."""
    return _TOPIC_RE.fullmatch(name) is not None


def normalise_topic(name: str) -> str:
    """The full name of a topic as Pulsar's `TopicName.get` reads it."""
    if "://" in name:
        return name
    if "/" in name:
        return f"{DEFAULT_DOMAIN}://{name}"
    return f"{DEFAULT_DOMAIN}://{DEFAULT_NAMESPACE}/{name}"


def partitioned_topic(full_name: str) -> str:
    """The partitioned topic a partition `<topic>-partition-<n>` belongs to (itself otherwise)."""
    return _PARTITION.sub("", full_name)


def namespace_of(full_name: str) -> str:
    """`tenant/ns` of a full topic name."""
    return full_name.split("://", 1)[1].rsplit("/", 1)[0]


PRODUCER_TRAFFIC = RecordSchema(
    name="producer_traffic",
    doc="One publish request (a message or a batch) a broker read from a producer's connection.",
    fields=(
        Field("ts_ms", "time_ms", doc="when the broker read the request (epoch ms or ISO-8601)"),
        Field("connection_id", "string", doc="the client connection (TCP channel) it came on"),
        Field("producer_id", "long", doc="the producer's id on that connection"),
        Field("topic", "string", doc="the topic (partition) published to"),
        Field("bytes", "long", doc="the request's payload size in bytes"),
        Field("messages", "long", required=False, doc="messages in the request; default 1"),
        Field("supports_throttle", "bool", required=False,
              doc="the connection's supports_throttle_producer_commands flag; default false"),
        Field("receipt_latency_ms", "long", required=False,
              doc="how long the client takes to answer a ThrottleProducer; null: no receipt would come"),
        Field("publish_latency_ms", "long", required=False,
              doc="from the read to the broker's SendReceipt; default 0"),
        Field("broker", "string", required=False,
              doc="the broker owning the topic and the connection; default ''"),
    ),
    rules=(
        Rule("connection_id must not be empty", lambda c: c["connection_id"] == "",
             lambda r: r["connection_id"] == ""),
        Rule("producer_id must not be negative", lambda c: c["producer_id"] < 0,
             lambda r: r["producer_id"] < 0),
        Rule(TOPIC_RULE, lambda c: ~c["topic"].rlike(_TOPIC_JAVA), lambda r: not is_legal_topic(r["topic"])),
        Rule("bytes must not be negative", lambda c: c["bytes"] < 0, lambda r: r["bytes"] < 0),
        Rule("messages must be at least 1", lambda c: c["messages"] < 1,
             lambda r: r["messages"] is not None and r["messages"] < 1),
        Rule("receipt_latency_ms must not be negative", lambda c: c["receipt_latency_ms"] < 0,
             lambda r: r["receipt_latency_ms"] is not None and r["receipt_latency_ms"] < 0),
        Rule("publish_latency_ms must not be negative", lambda c: c["publish_latency_ms"] < 0,
             lambda r: r["publish_latency_ms"] is not None and r["publish_latency_ms"] < 0),
    ),
)

TRAFFIC_COLUMNS = tuple(PRODUCER_TRAFFIC.field_names)

INPUTS = (Input("producer_traffic", PRODUCER_TRAFFIC,
                "publish requests per connection (producer throttle notices)"),)
