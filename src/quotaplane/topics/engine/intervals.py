"""Per topic and interval totals, and the dropped-request log, from the decisions.

An interval is `[start, start + interval_ms)` with `start = ts_ms - ts_ms mod interval_ms` (aligned
to the epoch). Rates are average rates over the whole interval: `bytes * 1000.0 / interval_ms`
bytes/s. `max_total_rate`/`max_topic_rate` are the highest one-minute rates a request of the interval
saw; `min_`/`max_topic_threshold` the range of the topic's threshold over its requests.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from quotaplane.topics.config import TopicQuotaConfig
from quotaplane.topics.engine.decision import ACCEPTED, ERROR, THROTTLED, drop_message
from quotaplane.topics.engine.evaluate import Decision

INTERVAL_COLUMNS = (
    "broker_id", "topic", "interval_start_ms", "requests", "accepted_requests", "throttled_requests",
    "error_requests", "accepted_bytes", "throttled_bytes", "error_bytes", "accepted_rate",
    "throttled_rate", "error_rate", "max_total_rate", "max_topic_rate", "min_topic_threshold",
    "max_topic_threshold",
)
DROPPED_COLUMNS = (
    "ts_ms", "broker_id", "topic", "bytes", "decision", "reason", "total_rate", "topic_rate",
    "total_threshold", "topic_threshold", "threshold_source", "message",
)


def interval_start(ts_ms: int, interval_ms: int) -> int:
    return ts_ms - ts_ms % interval_ms


def topic_intervals(decisions: Iterable[Decision], interval_ms: int) -> list[dict[str, Any]]:
    """One row per (broker_id, topic, interval_start_ms), sorted by that key."""
    rows: dict[tuple[int, str, int], dict[str, Any]] = {}
    for d in decisions:
        key = (d.broker_id, d.topic, interval_start(d.ts_ms, interval_ms))
        row = rows.get(key)
        if row is None:
            row = rows[key] = {
                "broker_id": key[0], "topic": key[1], "interval_start_ms": key[2], "requests": 0,
                "accepted_requests": 0, "throttled_requests": 0, "error_requests": 0,
                "accepted_bytes": 0, "throttled_bytes": 0, "error_bytes": 0,
                "max_total_rate": d.total_rate, "max_topic_rate": d.topic_rate,
                "min_topic_threshold": d.topic_threshold, "max_topic_threshold": d.topic_threshold,
            }
        row["requests"] += 1
        kind = {ACCEPTED: "accepted", THROTTLED: "throttled", ERROR: "error"}[d.decision]
        row[f"{kind}_requests"] += 1
        row[f"{kind}_bytes"] += d.bytes
        row["max_total_rate"] = max(row["max_total_rate"], d.total_rate)
        row["max_topic_rate"] = max(row["max_topic_rate"], d.topic_rate)
        row["min_topic_threshold"] = min(row["min_topic_threshold"], d.topic_threshold)
        row["max_topic_threshold"] = max(row["max_topic_threshold"], d.topic_threshold)
    out = []
    for key in sorted(rows):
        row = rows[key]
        for kind in ("accepted", "throttled", "error"):
            row[f"{kind}_rate"] = row[f"{kind}_bytes"] * 1000.0 / interval_ms
        out.append({c: row[c] for c in INTERVAL_COLUMNS})
    return out


def dropped_log(decisions: Iterable[Decision], config: TopicQuotaConfig) -> list[dict[str, Any]]:
    """The throttled and error requests with their reason and log message, in decision order."""
    out = []
    for d in decisions:
        if d.decision == ACCEPTED or d.reason is None:
            continue
        row = d.as_dict()
        row["message"] = drop_message(d.reason, d.topic, d.bytes, config.message_max_bytes,
                                      d.total_threshold, d.topic_threshold, d.threshold_source)
        out.append({c: row[c] for c in DROPPED_COLUMNS})
    return out
