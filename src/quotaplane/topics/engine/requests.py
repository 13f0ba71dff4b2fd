"""Reading produce requests from JSON Lines for the reference engine (same rules as the Spark reader)."""

from __future__ import annotations

from pathlib import Path

from quotaplane.core.jsonl import read_records
from quotaplane.topics.engine.evaluate import TopicRequest
from quotaplane.topics.records import TOPIC_REQUESTS


def read_requests(path: str | Path) -> list[TopicRequest]:
    """Every request of a JSON Lines file, in file order; blank lines are skipped.

    A line that is not a JSON object, or that breaks `TOPIC_REQUESTS`, raises `InputError`
    naming `file:line`, the field, the value and the rule.
    """
    return [TopicRequest(row["ts_ms"], row["broker_id"], row["topic"], row["bytes"])
            for _, _, row in read_records(path, TOPIC_REQUESTS)]
