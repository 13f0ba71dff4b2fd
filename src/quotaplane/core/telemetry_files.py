"""Reading a telemetry input without Spark: JSON Lines, CSV or Parquet, file or folder.

The reference engines, the replay of the live service and `quotaplane forecast` read inputs with
the same field types and rules as the Spark readers (`RecordSchema.coerce_record`); the first bad
record raises `InputError` naming the file, the line or row, the field, the value and the rule.
Files whose names start with `_` or `.` are skipped, as Spark skips them.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from quotaplane.core.errors import InputError
from quotaplane.core.jsonl import read_records
from quotaplane.core.records import RecordSchema

#: Files Spark's text readers decompress by their suffix, which this reader does not read.
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz", ".zst", ".lz4", ".snappy", ".deflate", ".zip")


def input_files(path: Path) -> list[Path]:
    """The files of an input: the file itself, or a folder's files; `InputError` when there is neither."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise InputError(str(path), "(file)", str(path), "cannot read: No such file or directory")
    return sorted(p for p in path.rglob("*") if p.is_file()
                  and not any(part.startswith(("_", ".")) for part in p.relative_to(path).parts))


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return round(value.timestamp() * 1000)
    return value


def read_input(path: Path, schema: RecordSchema) -> Iterator[dict[str, Any]]:
    """The typed records of one input (a file or a folder of files)."""
    for file in input_files(path):
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
