"""JSON Lines readers of the reference engine: the same field types and rules as the Spark readers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from quotaplane.core.errors import InputError
from quotaplane.core.jsonl import read_records
from quotaplane.core.records import RecordSchema
from quotaplane.storage.engine.volume import Volume
from quotaplane.storage.records import VOLUMES

# A volume as `quotaplane storage evaluate` reads it: the telemetry record without ts/cluster/poll_id.
VOLUME_FIELDS = ("broker_id", "log_dir", "total_bytes", "available_bytes")
# Checked in this order, so that a rule naming two fields ("available_bytes must not exceed
# total_bytes") is reported against the field it is about.
_CHECK_ORDER = ("broker_id", "log_dir", "available_bytes", "total_bytes")
VOLUME = RecordSchema(
    name="volume",
    doc="One log dir of one broker, for a single evaluation.",
    fields=tuple(VOLUMES.get(name) for name in _CHECK_ORDER),
    rules=VOLUMES.rules,
)


def read_jsonl(path: str | Path, schema: RecordSchema) -> list[tuple[int, dict[str, Any]]]:
    """(line number, record) of every record of a JSON Lines file, typed and checked; `InputError`
    names `file:line` and the field. Blank lines are skipped."""
    file = Path(path)
    return [(number, row) for number, _, row in read_records(file, schema, source=str(file))]


def read_volumes(path: str | Path) -> list[Volume]:
    """Volumes from JSON Lines `{"broker_id", "log_dir", "total_bytes", "available_bytes"}`;
    a (broker, log dir) given twice is an error naming both lines."""
    volumes: list[Volume] = []
    first_line: dict[tuple[int, str], int] = {}
    file = Path(path)
    for number, record in read_jsonl(file, VOLUME):
        v = Volume(**{k: record[k] for k in VOLUME_FIELDS})
        if v.key in first_line:
            raise InputError(f"{file}:{number}", "log_dir", v.log_dir,
                             f"broker {v.broker_id} log dir given twice (first at line {first_line[v.key]})")
        first_line[v.key] = number
        volumes.append(v)
    return volumes

