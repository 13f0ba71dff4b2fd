"""`quotaplane serve --replay DIR`: the service's rounds from recorded telemetry instead of a cluster.

The `volumes`, `membership` and `collection_errors` inputs are read with the reference readers
(JSON Lines, CSV or Parquet; the same line and field rules as every reader, docs/telemetry.md),
grouped into collection rounds exactly as the batch pipeline groups them (`group_rounds`), and given
to the service one round at a time, in time order, so its decisions equal the batch
`storage_decisions` round by round.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from quotaplane.core.errors import InputError
from quotaplane.core.jsonl import read_records
from quotaplane.core.policy import find_input
from quotaplane.core.records import RecordSchema
from quotaplane.live.admin import QuotaAlteration, QuotaEntity
from quotaplane.storage.config import StorageConfig
from quotaplane.storage.engine.rounds import Round, group_rounds
from quotaplane.storage.records import COLLECTION_ERRORS, MEMBERSHIP, VOLUMES


def _files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*") if p.is_file()
                  and not any(part.startswith(("_", ".")) for part in p.relative_to(path).parts))


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return round(value.timestamp() * 1000)
    return value


def read_input(path: Path, schema: RecordSchema) -> Iterator[dict[str, Any]]:
    """The typed records of one input (a file or a folder of files); the first bad record raises
    `InputError` naming it."""
    for file in _files(path):
        suffix = file.suffix.lower()
        if suffix in (".jsonl", ".json", ".ndjson"):
            for _, _, record in read_records(file, schema, str(file)):
                yield record
        elif suffix == ".csv":
            with file.open(newline="", encoding="utf-8") as handle:
                for number, row in enumerate(csv.DictReader(handle), start=2):
                    yield schema.coerce_record({k: (v if v != "" else None) for k, v in row.items()},
                                               f"{file}:{number}")
        elif suffix == ".parquet":
            import pyarrow.parquet as pq

            for number, row in enumerate(pq.read_table(file).to_pylist(), start=1):
                yield schema.coerce_record({k: _plain(v) for k, v in row.items()}, f"{file} row {number}")


def replay_rounds(telemetry: Path, config: StorageConfig) -> list[Round]:
    """Every collection round of the telemetry, in the order the service plays them."""
    if not telemetry.is_dir():
        raise InputError(str(telemetry), "--replay", str(telemetry), "is not a directory")
    inputs = {}
    for schema in (VOLUMES, MEMBERSHIP, COLLECTION_ERRORS):
        path = find_input(telemetry, schema.name)
        inputs[schema.name] = list(read_input(Path(path), schema)) if path else []
    if not inputs["volumes"] and not inputs["collection_errors"]:
        raise InputError(str(telemetry), "--replay", str(telemetry), "holds no volumes to replay")
    rounds = group_rounds(inputs["volumes"], inputs["membership"], inputs["collection_errors"],
                          config.check_interval_ms)
    return sorted(rounds, key=lambda rd: (rd.ts, rd.cluster or "", rd.order))


class InMemoryQuotas:
    """The client quotas of a replay (no cluster): held in memory, starting from `--client-quotas`,
    altered as a cluster would alter them (only the quota calls of `ClusterAdmin`)."""

    def __init__(self, quotas: Mapping[QuotaEntity, Mapping[str, float]] | None = None) -> None:
        self.quotas: dict[QuotaEntity, dict[str, float]] = {e: dict(q) for e, q in (quotas or {}).items()}

    def client_quotas(self) -> dict[QuotaEntity, dict[str, float]]:
        return {e: dict(q) for e, q in self.quotas.items() if q}

    def alter_client_quotas(self, alterations: Sequence[QuotaAlteration]) -> dict[QuotaEntity, str | None]:
        for a in alterations:
            entry = self.quotas.setdefault(a.entity, {})
            if a.value is None:
                entry.pop(a.key, None)
            else:
                entry[a.key] = a.value
        return {a.entity: None for a in alterations}

    def close(self) -> None:
        return
