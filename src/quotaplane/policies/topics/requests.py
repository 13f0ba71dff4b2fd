"""Reading produce requests from JSON Lines for the reference engine (same rules as the Spark reader)."""

from __future__ import annotations

import json
from pathlib import Path

from quotaplane.errors import InputError
from quotaplane.policies.topics.engine import TopicRequest
from quotaplane.telemetry.topics import TOPIC_REQUESTS


def read_requests(path: str | Path) -> list[TopicRequest]:
    """Every request of a JSON Lines file, in file order; blank lines are skipped.

    A line that is not a JSON object, or that breaks `TOPIC_REQUESTS`, raises `InputError`
    naming `file:line`, the field, the value and the rule.
    """
    file = Path(path)
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(str(file), "(file)", str(file), f"cannot read: {exc.strerror}") from exc
    out = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{file.name}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise InputError(where, "(record)", line[:80], "not a JSON object") from None
        if not isinstance(record, dict):
            raise InputError(where, "(record)", line[:80], "not a JSON object")
        row = TOPIC_REQUESTS.coerce_record(record, where)
        out.append(TopicRequest(row["ts_ms"], row["broker_id"], row["topic"], row["bytes"]))
    return out
