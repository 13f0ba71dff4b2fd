"""The telemetry kinds the simulator writes, their columns and Arrow types.

The storage kinds take their column order from the record schemas in `quotaplane.storage.records`
(`RecordSchema.field_names`), `partition_sizes` from `quotaplane.forecast.records`,
`producer_traffic` from `quotaplane.notices.records` (docs/notices.md); the other kinds follow the
inputs documented in docs/telemetry.md.
Time fields are epoch milliseconds.
"""

from __future__ import annotations

import pyarrow as pa

from quotaplane.forecast.records import PARTITION_SIZES
from quotaplane.notices.records import PRODUCER_TRAFFIC
from quotaplane.storage.records import COLLECTION_ERRORS, MEMBERSHIP, VOLUMES

_STORAGE_TYPES = {"time_ms": pa.int64(), "long": pa.int64(), "string": pa.string(),
                  "double": pa.float64(), "bool": pa.bool_()}


def _from_record_schema(schema: object) -> pa.Schema:
    return pa.schema([pa.field(f.name, _STORAGE_TYPES[f.type], nullable=not f.required)
                      for f in schema.fields])  # type: ignore[attr-defined]


KINDS: dict[str, pa.Schema] = {
    "volumes": _from_record_schema(VOLUMES),
    "membership": _from_record_schema(MEMBERSHIP),
    "collection_errors": _from_record_schema(COLLECTION_ERRORS),
    "partition_sizes": _from_record_schema(PARTITION_SIZES),
    "client_requests": pa.schema([
        pa.field("ts_ms", pa.int64(), nullable=False),
        pa.field("broker_id", pa.int64(), nullable=False),
        pa.field("user", pa.string(), nullable=False),
        pa.field("client_id", pa.string(), nullable=False),
        pa.field("quota_type", pa.string(), nullable=False),
        pa.field("value", pa.float64(), nullable=False),
    ]),
    "topic_requests": pa.schema([
        pa.field("ts_ms", pa.int64(), nullable=False),
        pa.field("broker_id", pa.int64(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("bytes", pa.int64(), nullable=False),
    ]),
    "backlog_snapshots": pa.schema([
        pa.field("ts_ms", pa.int64(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("subscription", pa.string(), nullable=False),
        pa.field("backlog_size_bytes", pa.int64(), nullable=False),
        pa.field("backlog_entries", pa.int64(), nullable=False),
        pa.field("oldest_unacked_publish_ts_ms", pa.int64(), nullable=True),
        pa.field("oldest_unacked_ledger_close_ts_ms", pa.int64(), nullable=True),
        pa.field("partitioned_topic", pa.string(), nullable=True),
    ]),
    "producer_traffic": _from_record_schema(PRODUCER_TRAFFIC),
}

STORAGE_KINDS = ("volumes", "membership", "collection_errors", "partition_sizes")
REQUEST_KINDS = ("client_requests", "topic_requests")
BACKLOG_KINDS = ("backlog_snapshots",)
PRODUCER_KINDS = ("producer_traffic",)
QUOTA_TYPES = ("produce", "fetch", "request", "controller_mutation")


def table(kind: str, columns: dict[str, pa.Array]) -> pa.Table:
    """A table of `kind` from its columns (in any order), in the kind's column order and types."""
    schema = KINDS[kind]
    return pa.Table.from_arrays([columns[f.name] for f in schema], schema=schema)


def strings(names: list[str], index: object) -> pa.Array:
    """`names[index]` as a string array, without a Python loop over the rows."""
    dictionary = pa.array(names, type=pa.string())
    indices = pa.array(index, type=pa.int32())
    return pa.DictionaryArray.from_arrays(indices, dictionary).dictionary_decode()
