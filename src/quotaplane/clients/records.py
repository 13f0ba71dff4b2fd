"""Client request telemetry: one request a broker measured against a client quota.

spec: Kafka `ClientQuotaManager.recordAndGetThrottleTimeMs`: a broker records
each request's value in the sensor of its quota type, so a record is one `record` call: a produce
request's bytes, a fetch response's bytes, a request's thread time in ms, or the partitions one
topic of a CreateTopics/CreatePartitions/DeleteTopics request mutates.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from quotaplane.clients.engine.evaluate import ClientRequest
from quotaplane.clients.engine.quota_types import (
    MAX_EXACT_VALUE,
    MAX_REQUEST_MS,
    QUOTA_TYPES,
    REQUEST,
    WHOLE_VALUE_TYPES,
)
from quotaplane.core.jsonl import read_records
from quotaplane.core.policy import Input
from quotaplane.core.records import Field, RecordSchema, Rule

if TYPE_CHECKING:
    from pyspark.sql import Column

QUOTA_TYPE_RULE = f"quota_type must be one of {', '.join(QUOTA_TYPES)}"
VALUE_NAN_RULE = "value must be a number, not NaN"
VALUE_NEGATIVE_RULE = "value must not be negative"
VALUE_WHOLE_RULE = "value must be a whole number for produce, fetch and controller_mutation"
VALUE_RANGE_RULE = f"value must be at most {MAX_EXACT_VALUE}"
VALUE_REQUEST_RANGE_RULE = f"value must be at most {MAX_REQUEST_MS} ms for request"
USER_EMPTY_RULE = "user must not be empty (Kafka's unauthenticated principal is ANONYMOUS)"



def _isnan(value: Column) -> Column:
    from pyspark.sql import functions as F

    return F.isnan(value)


CLIENT_REQUESTS = RecordSchema(
    name="client_requests",
    doc="One request one broker recorded against a client quota.",
    fields=(
        Field("ts_ms", "time_ms", doc="when the broker recorded the request (epoch ms or ISO-8601)"),
        Field("broker_id", "long", doc="the broker that measured it: quotas are per broker"),
        Field("user", "string", doc="the authenticated user principal name"),
        Field("client_id", "string", doc="the request's client id (may be empty)"),
        Field("quota_type", "string", doc="produce, fetch, request or controller_mutation"),
        Field("value", "double",
              doc="bytes (produce, fetch), request thread time in ms (request), or partition "
                  "mutations (controller_mutation)"),
    ),
    rules=(
        Rule(QUOTA_TYPE_RULE, lambda c: ~c["quota_type"].isin(*QUOTA_TYPES),
             lambda r: r["quota_type"] not in QUOTA_TYPES),
        Rule(VALUE_NAN_RULE, lambda c: _isnan(c["value"]), lambda r: r["value"] != r["value"]),
        Rule(VALUE_NEGATIVE_RULE, lambda c: c["value"] < 0, lambda r: r["value"] < 0),
        Rule(VALUE_RANGE_RULE, lambda c: c["value"] > float(MAX_EXACT_VALUE),
             lambda r: r["value"] > MAX_EXACT_VALUE),
        Rule(VALUE_REQUEST_RANGE_RULE,
             lambda c: (c["quota_type"] == REQUEST) & (c["value"] > float(MAX_REQUEST_MS)),
             lambda r: r["quota_type"] == REQUEST and r["value"] > MAX_REQUEST_MS),
        Rule(VALUE_WHOLE_RULE,
             lambda c: c["quota_type"].isin(*WHOLE_VALUE_TYPES) & (c["value"] % 1 != 0),
             lambda r: r["quota_type"] in WHOLE_VALUE_TYPES and r["value"] % 1 != 0),
        Rule(USER_EMPTY_RULE, lambda c: c["user"] == "", lambda r: r["user"] == ""),
    ),
)

REQUEST_COLUMNS = tuple(CLIENT_REQUESTS.field_names)
INPUTS = (Input("client_requests", CLIENT_REQUESTS, "per-request client quota usage (Kafka client quotas)"),)


def read_requests_jsonl(path: str | Path) -> list[ClientRequest]:
    """Requests from a JSON Lines file for the reference engine; the first bad line raises
    `InputError` naming the line and the field. Blank lines are skipped."""
    return [ClientRequest(row["ts_ms"], row["broker_id"], row["user"], row["client_id"],
                          row["quota_type"], row["value"])
            for _, _, row in read_records(path, CLIENT_REQUESTS)]
