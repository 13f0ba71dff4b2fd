"""Every kind has the documented columns, and every row is valid for its record schema."""

from __future__ import annotations

import pyarrow as pa
import pytest

from quotaplane.forecast.records import PARTITION_SIZES
from quotaplane.notices.records import PRODUCER_TRAFFIC
from quotaplane.registry import all_inputs
from quotaplane.sim.kinds import KINDS, QUOTA_TYPES
from quotaplane.storage.records import COLLECTION_ERRORS, MEMBERSHIP, VOLUMES

# The kinds built from a record schema (the storage family: one generator, one round at a time).
STORAGE = {"volumes": VOLUMES, "membership": MEMBERSHIP, "collection_errors": COLLECTION_ERRORS,
           "partition_sizes": PARTITION_SIZES}
FIELDS = {
    "client_requests": ["ts_ms", "broker_id", "user", "client_id", "quota_type", "value"],
    "topic_requests": ["ts_ms", "broker_id", "topic", "bytes"],
    "backlog_snapshots": ["ts_ms", "topic", "subscription", "backlog_size_bytes", "backlog_entries",
                          "oldest_unacked_publish_ts_ms", "oldest_unacked_ledger_close_ts_ms",
                          "partitioned_topic"],
    "producer_traffic": list(PRODUCER_TRAFFIC.field_names),
}
# The record schemas of the other inputs, as the policies declare them.
OTHER_SCHEMAS = {i.name: i.schema for i in all_inputs() if i.name not in STORAGE}


def test_storage_kinds_follow_the_record_schemas() -> None:
    for kind, schema in STORAGE.items():
        assert KINDS[kind].names == schema.field_names


def test_other_kinds_have_the_documented_fields() -> None:
    for kind, names in FIELDS.items():
        assert KINDS[kind].names == names


def _all(tables: dict[str, pa.Table], kind: str) -> list[dict]:
    assert kind in tables and tables[kind].num_rows > 0, kind
    return tables[kind].to_pylist()


@pytest.mark.parametrize("fixture", ["fleet_tables", "errors_tables", "fill_tables"])
def test_every_storage_row_passes_its_schema(fixture: str, request: pytest.FixtureRequest) -> None:
    tables = request.getfixturevalue(fixture)
    for kind, schema in STORAGE.items():
        if kind == "collection_errors" and tables[kind].num_rows == 0:
            continue
        for i, row in enumerate(_all(tables, kind)):
            assert schema.coerce_record(row, f"{kind}:{i}") == row


@pytest.mark.parametrize("fixture", ["fleet_tables", "errors_tables", "fill_tables"])
def test_every_other_row_has_its_fields_and_types(fixture: str, request: pytest.FixtureRequest) -> None:
    tables = request.getfixturevalue(fixture)
    for kind in FIELDS:
        assert tables[kind].schema == KINDS[kind], kind
    requests = tables["client_requests"].to_pydict()
    assert set(requests["quota_type"]) <= set(QUOTA_TYPES)
    assert min(requests["value"]) > 0
    assert min(tables["topic_requests"].column("bytes").to_pylist()) > 0
    for row in _all(tables, "backlog_snapshots"):
        assert row["topic"].startswith("persistent://") and row["topic"].count("/") == 4
        parent = row["partitioned_topic"]
        assert (parent is None) == ("-partition-" not in row["topic"])
        if parent is not None:
            assert row["topic"].startswith(parent + "-partition-")


@pytest.mark.parametrize("kind", sorted(OTHER_SCHEMAS))
def test_every_other_row_passes_the_policy_schema(kind: str, fleet_tables: dict[str, pa.Table]) -> None:
    schema = OTHER_SCHEMAS[kind]
    assert set(schema.field_names) == set(FIELDS[kind])
    for i, row in enumerate(_all(fleet_tables, kind)):
        schema.coerce_record(row, f"{kind}:{i}")


def test_registered_kinds_are_the_pipeline_inputs() -> None:
    assert sorted(KINDS) == sorted(i.name for i in all_inputs())
