"""JSON Lines for the reference engines: the same field types and rules as the Spark readers.

Every reader of one decision at a time (the CLI commands) goes through here, so a bad line is
reported the same way everywhere: `InputError` naming `file:line`, the field, the value and the rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from quotaplane.core.errors import InputError
from quotaplane.core.fields import parse_line
from quotaplane.core.records import RecordSchema

UTF8_BOM = b"\xef\xbb\xbf"


def read_lines(path: str | Path) -> list[bytes]:
    """The lines of a file as bytes, as Spark's text reader (Hadoop's line reader) gives them: a
    UTF-8 byte order mark at the start of the file dropped, then split at `\\n`, `\\r\\n` or `\\r`;
    `InputError` when it cannot be read."""
    file = Path(path)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise InputError(str(file), "(file)", str(file), f"cannot read: {exc.strerror}") from exc
    return re.split(rb"\r\n|\r|\n", data.removeprefix(UTF8_BOM))


def json_objects(lines: Iterable[bytes | str], source: str) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(line number, `source:line`, object) for every non-blank line; a line that is not exactly one
    JSON object (the rules of `quotaplane.core.fields.parse_line`) raises `InputError`."""
    for number, line in enumerate(lines, start=1):
        record, reason = parse_line(line)
        if record is not None:
            yield number, f"{source}:{number}", record
        elif reason is not None:
            text = line.decode("utf-8", errors="backslashreplace") if isinstance(line, bytes) else line
            raise InputError(f"{source}:{number}", "(record)", text.strip()[:80], reason)


def read_records(path: str | Path, schema: RecordSchema,
                 source: str | None = None) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(line number, `source:line`, typed record) of every record of a JSON Lines file, checked
    against `schema`. `source` names the file in messages (default: its name)."""
    file = Path(path)
    for number, where, record in json_objects(read_lines(file), source or file.name):
        yield number, where, schema.coerce_record(record, where)
