"""Eviction counters and each topic's totals as window transforms (rules:
`quotaplane.backlog.engine.stats`; spec: Public API and Metrics).

Both use one window over a topic's rows in `(ts_ms, subscription)` order, the order the stage's rows
already have: `size_evictions_total` / `time_evictions_total` count the topic's eviction runs so far
(on the row of each check), and `_topic` (set on one row per topic, null elsewhere) holds what the
topic adds up to: its row counts, check counts, maxima, eviction totals and its check at its last
tick. Collected (one small row per topic), `quotaplane.backlog.spark.topics` builds the topic
stats, partitioned stats, metrics, summary and report table from them.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from quotaplane.backlog.engine.model import SIZE, TIME
from quotaplane.core.spark.readers import REASON

# A topic's rows in `(ts_ms, subscription)` order; the frames are written as SQL (one parsed
# expression per column instead of many small Python-built ones: cheaper to plan).
_ORDER = "PARTITION BY topic ORDER BY ts_ms, subscription"
_WHOLE = f"OVER ({_ORDER} ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)"
_SO_FAR = f"OVER ({_ORDER} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
_LAST = ("named_struct('ts_ms', ts_ms, 'namespace', namespace, 'partitioned_topic', partitioned_topic, "
         "'backlog_age_seconds', backlog_age_seconds, 'backlog_size_bytes', topic_backlog_size_bytes, "
         "'oldest_subscription', oldest_subscription, 'size_limit', size_limit, 'time_limit', time_limit)")


def _runs(quota_type: str) -> str:
    return f"_rank1 AND eviction_run AND exceeded = '{quota_type}'"


def _checks(condition: str) -> str:
    return f"count(CASE WHEN _rank1 AND {condition} THEN 1 END)"


# each topic's totals (the fields of `_topic`), over every row of the topic
TOTALS = (
    ("read", "count(1)"),
    ("used", f"count(CASE WHEN {REASON} IS NULL THEN 1 END)"),
    ("ticks", _checks("true")),
    ("first_ts", "min(CASE WHEN _rank1 THEN ts_ms END)"),
    ("last", f"max(CASE WHEN _rank1 THEN {_LAST} END)"),  # the last tick's check (ts_ms first)
    ("max_age", "max(CASE WHEN _rank1 THEN backlog_age_seconds END)"),
    ("time_limit", "max(CASE WHEN _rank1 THEN time_limit END)"),
    ("size_limit", "max(CASE WHEN _rank1 THEN size_limit END)"),
    ("max_size", "max(CASE WHEN _rank1 THEN topic_backlog_size_bytes END)"),
    ("size_exceeded", _checks(f"exceeded = '{SIZE}'")),
    ("time_exceeded", _checks(f"exceeded = '{TIME}'")),
    ("size_evictions", f"count(CASE WHEN {_runs(SIZE)} THEN 1 END)"),
    ("time_evictions", f"count(CASE WHEN {_runs(TIME)} THEN 1 END)"),
    ("producers_held", _checks("producers = 'held'")),
    ("producers_failed", _checks("producers = 'failed'")),
    ("evicted_entries", "sum(_ev_entries)"),
    ("evicted_bytes", "sum(_ev_bytes)"),
)


def with_topic_totals(df: DataFrame) -> DataFrame:
    """Add the cumulative eviction counters and `_topic` (needs the decided rows with evictions)."""
    counters = [F.expr(f"CAST(sum(CASE WHEN {_runs(q)} THEN 1 ELSE 0 END) {_SO_FAR} AS BIGINT)")
                .alias(f"{q}_evictions_total") for q in (SIZE, TIME)]
    fields = ", ".join(f"'{name}', {total} {_WHOLE}" for name, total in TOTALS)
    topic = F.expr(f"CASE WHEN row_number() OVER ({_ORDER}) = 1 THEN named_struct({fields}) END")
    # one select: every window function of the topic order in one Window operator
    return df.select("*", *counters, topic.alias("_topic"))


def topic_totals(df: DataFrame) -> DataFrame:
    """One row per topic (and one for rows without a valid topic): `topic` and the `_topic` fields."""
    return df.where(F.col("_topic").isNotNull()).select("topic", "_topic.*")
