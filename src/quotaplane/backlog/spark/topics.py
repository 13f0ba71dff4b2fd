"""What each topic adds up to, in Python: the stage collects one small row per topic
(`quotaplane.backlog.spark.tables.topic_totals`) and builds from them the topic stats, partitioned
stats, metric rows and summary counts (rules: `quotaplane.backlog.engine.stats`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import fields
from typing import Any

from pyspark.sql import types as T

from quotaplane.backlog.engine.model import TopicStats
from quotaplane.backlog.engine.stats import TopicMetrics, combine_partitions, known_age, stats_at

Totals = dict[str, Any]  # `topic` and the `_topic` fields (`quotaplane.backlog.engine.kernel.TOTALS`)
STATS_FIELDS = tuple(f.name for f in fields(TopicStats))


def _schema(*fields: tuple[str, T.DataType, bool]) -> T.StructType:
    return T.StructType([T.StructField(name, dtype, nullable) for name, dtype, nullable in fields])


_LIMITS_AGE = (("backlogQuotaLimitSize", T.LongType(), False), ("backlogQuotaLimitTime", T.LongType(), False),
               ("oldestBacklogMessageAgeSeconds", T.LongType(), False),
               ("oldestBacklogMessageSubscriptionName", T.StringType(), True))
TOPIC_STATS_SCHEMA = _schema(("topic", T.StringType(), True), ("partitioned_topic", T.StringType(), True),
                             *_LIMITS_AGE)
PARTITIONED_STATS_SCHEMA = _schema(("topic", T.StringType(), True), *_LIMITS_AGE)


def checked(totals: Iterable[Totals]) -> list[Totals]:
    """The topics with at least one check, by topic (rows of quarantined groups only are left out)."""
    return sorted((t for t in totals if t["ticks"]), key=lambda t: t["topic"])


def topic_stats(topics: Sequence[Totals]) -> list[dict[str, Any]]:
    """PIP-323 topic stats from each topic's last check (`TOPIC_STATS_SCHEMA`), by topic."""
    out = []
    for t in topics:
        last = t["last"]
        stats = stats_at(last["size_limit"], last["time_limit"], last["backlog_age_seconds"],
                         last["oldest_subscription"])
        out.append({"topic": t["topic"], "partitioned_topic": last["partitioned_topic"], **stats.as_dict()})
    return out


def partitioned_stats(stats: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Partitioned-topic stats (`PARTITIONED_STATS_SCHEMA`) from the topic stats, by topic."""
    partitions: dict[str, list[tuple[str, TopicStats]]] = {}
    for s in stats:
        if s["partitioned_topic"] is not None:
            partitions.setdefault(s["partitioned_topic"], []).append(
                (s["topic"], TopicStats(*(s[f] for f in STATS_FIELDS))))
    return [{"topic": parent, **p.as_dict()} for parent, p in combine_partitions(partitions).items()]


def topic_metrics(topics: Sequence[Totals]) -> list[TopicMetrics]:
    """Per-topic metric values (last-tick gauges, eviction totals), by namespace then topic."""
    out = []
    for t in topics:
        last = t["last"]
        out.append(TopicMetrics(last["namespace"], t["topic"], last["backlog_size_bytes"],
                                known_age(last["backlog_age_seconds"]), last["size_limit"],
                                last["time_limit"],
                                t["size_evictions"], t["time_evictions"]))
    return sorted(out, key=lambda m: (m.namespace, m.topic))
