"""JSON Lines for the reference engines: the same field types and rules as the Spark readers.

Every reader of one decision at a time (the CLI commands) goes through here, so a bad line is
reported the same way everywhere: `InputError` naming `file:line`, the field, the value and the rule.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from quotaplane.core.errors import InputError
from quotaplane.core.records import RecordSchema


def read_lines(path: str | Path) -> list[str]:
    """The lines of a UTF-8 text file; `InputError` when it cannot be read."""
    file = Path(path)
    try:
        return file.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(str(file), "(file)", str(file), f"cannot read: {exc.strerror}") from exc


def json_objects(lines: Iterable[str], source: str) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(line number, `source:line`, object) for every non-blank line; a line that is not a JSON
    object raises `InputError`."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(where, "(record)", line.strip()[:80],
                             f"unparsable record: {exc.msg}") from None
        if not isinstance(record, dict):
            raise InputError(where, "(record)", line.strip()[:80], "not a JSON object")
        yield number, where, record


def read_records(path: str | Path, schema: RecordSchema,
                 source: str | None = None) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(line number, `source:line`, typed record) of every record of a JSON Lines file, checked
    against `schema`. `source` names the file in messages (default: its name)."""
    file = Path(path)
    for number, where, record in json_objects(read_lines(file), source or file.name):
        yield number, where, schema.coerce_record(record, where)
