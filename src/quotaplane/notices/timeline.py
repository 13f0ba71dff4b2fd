"""The notices' timeline: its time buckets and its rows (docs/notices.md, Outputs).

The report draws the notices per bucket and reason; the reference engine sums its notices with
`timeline_rows`, the Spark stage each broker's with `quotaplane.notices.spark.aggregates`. Kept apart
from the report, whose figures need matplotlib, so that the brokers' Python workers do not import it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from quotaplane.notices.engine.evaluate import Notice

TIMELINE_COLUMNS = ("bucket_start_ms", "reason", "notices", "connection_paused_ms",
                    "connection_paused_ms_without_notices")
# Timeline buckets: the smallest of these giving at most `MAX_BUCKETS` buckets over the notices' span.
BUCKET_CHOICES_MS = (1_000, 5_000, 10_000, 30_000, 60_000, 300_000, 900_000, 3_600_000, 21_600_000,
                     86_400_000)
MAX_BUCKETS = 300


def bucket_ms_for(first_ms: int | None, last_ms: int | None, max_buckets: int = MAX_BUCKETS) -> int:
    """The timeline bucket: the smallest of `BUCKET_CHOICES_MS` that covers [first, last] in at most
    `max_buckets` buckets (the largest choice otherwise; the first one without notices)."""
    if first_ms is None or last_ms is None:
        return BUCKET_CHOICES_MS[0]
    for size in BUCKET_CHOICES_MS:
        if bucket_start(last_ms, size) - bucket_start(first_ms, size) < size * max_buckets:
            return size
    return BUCKET_CHOICES_MS[-1]


def bucket_start(ts_ms: int, bucket_ms: int) -> int:
    """The start of a timestamp's bucket, aligned on the epoch: `ts_ms - ts_ms mod bucket_ms`."""
    return ts_ms - ts_ms % bucket_ms


def timeline_rows(notices: Iterable[Notice], bucket_ms: int) -> list[dict[str, Any]]:
    """The timeline aggregates of notices (`TIMELINE_COLUMNS`), by bucket and reason."""
    rows: dict[tuple[int, str], dict[str, Any]] = {}
    for n in notices:
        key = (bucket_start(n.ts_ms, bucket_ms), n.reason)
        row = rows.setdefault(key, {"bucket_start_ms": key[0], "reason": key[1], "notices": 0,
                                    "connection_paused_ms": 0, "connection_paused_ms_without_notices": 0})
        row["notices"] += 1
        row["connection_paused_ms"] += n.connection_paused_ms
        row["connection_paused_ms_without_notices"] += n.connection_paused_ms_without_notices
    return [rows[k] for k in sorted(rows)]
