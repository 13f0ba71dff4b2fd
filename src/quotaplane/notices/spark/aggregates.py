"""Each broker's notices summed where they are decided: the stage needs no second job over them.

The `applyInPandas` group of a broker (`evaluate.evaluate_brokers`) gives the broker's last notice
a `broker_aggregates` text: the JSON of `broker_aggregates` over its notices. The stage observes
those texts while it writes the notices (an `Observation` of their `collect_list`), and `merge`
adds them up in the driver (docs/notices.md, Outputs):

- the `notice_comparison` rows, per broker, topic and reason: a broker's own rows are whole;
- the report's timeline, per bucket and reason, with the bucket of the span of all notices
  (`timeline.bucket_ms_for`). A broker sums its notices by the bucket of its own span. The span of
  all holds each broker's, so its bucket is the same choice or a larger one, and each choice is a
  multiple of the smaller ones (`BUCKET_CHOICES_MS`): a broker's buckets fall whole into the
  merged ones.

A broker without notices has no row to carry its text, and nothing to add.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pandas as pd

from quotaplane.notices.engine.evaluate import COMPARISON_COLUMNS, RECEIPTS
from quotaplane.notices.timeline import TIMELINE_COLUMNS, bucket_ms_for, bucket_start

AGGREGATES = "broker_aggregates"
_COMPARISON_KEY = list(COMPARISON_COLUMNS[:3])
_COMPARISON_SUMS = list(COMPARISON_COLUMNS[3:])
_TIMELINE_KEY = list(TIMELINE_COLUMNS[:2])
_TIMELINE_SUMS = list(TIMELINE_COLUMNS[2:])
_LONG = 2**63


def broker_aggregates(notices: pd.DataFrame) -> str:
    """One broker's notices (the kernel's columns, at least one) -> the JSON of its name (`broker`),
    their span (`first`, `last`), the bucket of that span (`bucket_ms`), their `comparison` rows and their
    `timeline` rows at that bucket. Sums are exact (Python integers where int64 could overflow)."""
    ts = notices["ts_ms"]
    first, last = int(ts.min()), int(ts.max())
    bucket_ms = bucket_ms_for(first, last)
    frame = pd.DataFrame({
        "broker": notices["broker"], "topic": notices["topic"], "reason": notices["reason"],
        "bucket_start_ms": ts - ts % bucket_ms, "notices": 1,
        **{receipt: (notices["receipt"] == receipt).astype("int64") for receipt in RECEIPTS},
        "pause_for_millis_total": notices["pause_for_millis"],
        **{c: notices[c] for c in ("connection_paused_ms", "connection_paused_ms_without_notices",
                                   "stalled_topics", "stalled_topics_without_notices")}})
    for column in _COMPARISON_SUMS:
        values = frame[column]
        if len(values) * max(abs(int(values.min())), abs(int(values.max()))) >= _LONG:
            frame[column] = values.astype(object)  # summed as Python integers
    return json.dumps({"broker": notices["broker"].iloc[0], "first": first, "last": last,
                       "bucket_ms": bucket_ms, "comparison": _sums(frame, _COMPARISON_KEY, _COMPARISON_SUMS),
                       "timeline": _sums(frame, _TIMELINE_KEY, _TIMELINE_SUMS)})


def _sums(frame: pd.DataFrame, key: list[str], sums: list[str]) -> list[list[Any]]:
    grouped = frame.groupby(key, sort=False)[sums].sum().reset_index()
    return [[_plain(v) for v in row] for row in grouped.itertuples(index=False, name=None)]


def _plain(value: Any) -> Any:
    return int(value) if not isinstance(value, str) else value


def merge(texts: Iterable[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """The brokers' `broker_aggregates` texts -> the `notice_comparison` rows (by broker, topic and
    reason), the timeline rows (`TIMELINE_COLUMNS`, by bucket and reason) and the timeline's bucket,
    as the reference engine gives them from the notices. A comparison sum beyond a LONG fails. A
    broker's text observed twice (a stage run again after a lost shuffle observes its tasks again)
    counts once."""
    brokers = list({b["broker"]: b for b in map(json.loads, texts)}.values())
    first = min((b["first"] for b in brokers), default=None)
    last = max((b["last"] for b in brokers), default=None)
    bucket_ms = bucket_ms_for(first, last)
    comparison = [dict(zip(COMPARISON_COLUMNS, row, strict=True)) for b in brokers for row in b["comparison"]]
    for row in comparison:
        for column in _COMPARISON_SUMS:
            if row[column] >= _LONG:
                raise ValueError(f"{column} of the notices of broker {row['broker']!r}, topic "
                                 f"{row['topic']!r}, reason {row['reason']} is beyond a LONG")
    timeline: dict[tuple[int, str], dict[str, Any]] = {}
    for b in brokers:
        if bucket_ms % b["bucket_ms"]:
            raise AssertionError(f"a broker's bucket {b['bucket_ms']} ms does not divide {bucket_ms} ms")
        for start, reason, *sums in b["timeline"]:
            key = (bucket_start(start, bucket_ms), reason)
            row = timeline.setdefault(key, dict(zip(TIMELINE_COLUMNS, (*key, *[0] * len(sums)), strict=True)))
            for column, value in zip(_TIMELINE_SUMS, sums, strict=True):
                row[column] += value
    comparison.sort(key=lambda r: (r["broker"], r["topic"], r["reason"]))
    return comparison, [timeline[k] for k in sorted(timeline)], bucket_ms
