"""Topic bytes-in telemetry: one produce request to one topic on one broker.

spec: kafka-topic-bytes-in-quota (Low level design, 3 and 4): a broker judges each append with the
broker-wide and the topic's bytes-in meters, so a record is the append a broker was asked to make.
"""

from __future__ import annotations

import re

from quotaplane.core.policy import Input
from quotaplane.core.records import Field, RecordSchema, Rule

# Kafka's legal topic names (`org.apache.kafka.common.internals.Topic.validate`): ASCII letters, digits,
# '.', '_' and '-', 1 to 249 characters, and neither "." nor "..".
TOPIC_NAME_MAX_LENGTH = 249
_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")
_TOPIC_NAME_JAVA = r"^[a-zA-Z0-9._-]{1,249}\z"  # \z: the very end (Java's $ also matches before a final \n)

TOPIC_NAME_RULE = "topic must be 1 to 249 of [a-zA-Z0-9._-] and not '.' or '..'"


def is_legal_topic_name(name: str) -> bool:
    """Kafka's topic-name rule (see `TOPIC_NAME_RULE`)."""
    return bool(_TOPIC_NAME.fullmatch(name)) and name not in (".", "..")


TOPIC_REQUESTS = RecordSchema(
    name="topic_requests",
    doc="One produce request (record batch append) to one topic on one broker.",
    fields=(
        Field("ts_ms", "time_ms", doc="when the broker judged the request (epoch ms or ISO-8601)"),
        Field("broker_id", "long", doc="the broker (node) id that received the request"),
        Field("topic", "string", doc="the topic the records were produced to"),
        Field("bytes", "long", doc="the size of the record batch in bytes"),
    ),
    rules=(
        Rule("bytes must not be negative", lambda c: c["bytes"] < 0, lambda r: r["bytes"] < 0),
        Rule(TOPIC_NAME_RULE,
             lambda c: ~c["topic"].rlike(_TOPIC_NAME_JAVA) | c["topic"].isin(".", ".."),
             lambda r: not is_legal_topic_name(r["topic"])),
    ),
)

# The columns of a used row, for building DataFrames in tests and transforms.
REQUEST_COLUMNS = tuple(TOPIC_REQUESTS.field_names)

INPUTS = (Input("topic_requests", TOPIC_REQUESTS, "produce requests per topic (topic bytes-in quotas)"),)
