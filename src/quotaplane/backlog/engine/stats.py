"""What the ticks add up to: topic stats, partitioned-topic stats and the metric values.

spec: Public API and Metrics; Pulsar `TopicStatsImpl`, `AggregatedNamespaceStats`.
- Topic stats come from the topic's last check tick: the two limits, the backlog age (-1 when
  unknown) and the subscription holding the oldest message (null when the age is unknown).
- Partitioned stats: limits copied from the partitions; the partition with the largest age wins,
  taking its subscription with it, starting from (-1, null) and replacing only on a strictly
  larger age, partitions added in partition-index order (`TopicStatsImpl.add`).
- Namespace aggregation (`exposeTopicLevelMetricsInPrometheus=false`,
  `AggregatedNamespaceStats`): backlog size and eviction counts are summed, the size limit is the
  maximum starting from 0, the time limit the maximum starting from -1; no age.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from quotaplane.backlog.engine.model import SIZE, TIME, TickResult, TopicStats
from quotaplane.backlog.names import partition_index

UNKNOWN_AGE = -1


@dataclass(frozen=True)
class TopicMetrics:
    """The metric values of one topic (or, aggregated, of one namespace: `topic` is None)."""

    namespace: str
    topic: str | None
    backlog_size_bytes: int
    backlog_age_seconds: int | None  # None when aggregated by namespace (the age is left out)
    size_limit: int
    time_limit: int
    size_evictions: int
    time_evictions: int


def latest_per_topic(results: Iterable[TickResult]) -> dict[str, TickResult]:
    """Each topic's result at its last tick."""
    latest: dict[str, TickResult] = {}
    for r in results:
        if r.topic not in latest or r.ts_ms > latest[r.topic].ts_ms:
            latest[r.topic] = r
    return latest


def known_age(age: int | None) -> int:
    """A backlog age as the stats report it: -1 when unknown."""
    return UNKNOWN_AGE if age is None else age


def stats_at(size_limit: int, time_limit: int, age: int | None,
             oldest_subscription: str | None) -> TopicStats:
    """Topic stats from one check: the limits, the age (-1 when unknown) and the subscription with
    the oldest message (null when the age is unknown)."""
    return TopicStats(size_limit, time_limit, known_age(age), None if age is None else oldest_subscription)


def topic_stats_of(result: TickResult) -> TopicStats:
    return stats_at(result.quotas.size_limit, result.quotas.time_limit, result.backlog_age_seconds,
                    result.oldest_subscription)


def topic_stats(results: Iterable[TickResult]) -> dict[str, TopicStats]:
    """Topic stats of every topic, from its last tick."""
    return {topic: topic_stats_of(r) for topic, r in sorted(latest_per_topic(results).items())}


def partition_order(topic: str) -> tuple[bool, int, str]:
    """The order partitions are added in: partition index (names without one last), then name."""
    index = partition_index(topic)
    return (index is None, index if index is not None else 0, topic)


def combine_partitions(partitions: dict[str, list[tuple[str, TopicStats]]]) -> dict[str, TopicStats]:
    """Stats of every partitioned topic from its partitions' (name, stats), by partitioned topic.

    `TopicStatsImpl.add` in partition order: the age starts at (-1, null) and is replaced only by a
    strictly larger one, with its subscription; the limits are those of the last partition added.
    """
    out: dict[str, TopicStats] = {}
    for parent in sorted(partitions):
        members = sorted(partitions[parent], key=lambda member: partition_order(member[0]))
        age, name = UNKNOWN_AGE, None
        for _, stats in members:
            if stats.oldestBacklogMessageAgeSeconds > age:
                age = stats.oldestBacklogMessageAgeSeconds
                name = stats.oldestBacklogMessageSubscriptionName
        last = members[-1][1]
        out[parent] = TopicStats(last.backlogQuotaLimitSize, last.backlogQuotaLimitTime, age, name)
    return out


def partitioned_stats(results: Iterable[TickResult]) -> dict[str, TopicStats]:
    """Stats of every partitioned topic, from its partitions' last ticks."""
    partitions: dict[str, list[tuple[str, TopicStats]]] = {}
    for r in latest_per_topic(results).values():
        if r.partitioned_topic is not None:
            partitions.setdefault(r.partitioned_topic, []).append((r.topic, topic_stats_of(r)))
    return combine_partitions(partitions)


def topic_metrics(results: Sequence[TickResult]) -> list[TopicMetrics]:
    """Per-topic metric values: last-tick gauges, eviction counters as totals, sorted by topic."""
    out = []
    for topic, r in sorted(latest_per_topic(results).items()):
        out.append(TopicMetrics(
            namespace=r.namespace, topic=topic, backlog_size_bytes=r.backlog_size_bytes,
            backlog_age_seconds=known_age(r.backlog_age_seconds),
            size_limit=r.quotas.size_limit, time_limit=r.quotas.time_limit,
            size_evictions=r.size_evictions_total, time_evictions=r.time_evictions_total))
    return out


def namespace_metrics(topics: Iterable[TopicMetrics]) -> list[TopicMetrics]:
    """Per-namespace aggregation of per-topic metric values, sorted by namespace."""
    acc: dict[str, TopicMetrics] = {}
    for t in topics:
        a = acc.get(t.namespace) or TopicMetrics(t.namespace, None, 0, None, 0, -1, 0, 0)
        acc[t.namespace] = TopicMetrics(
            t.namespace, None, a.backlog_size_bytes + t.backlog_size_bytes, None,
            max(a.size_limit, t.size_limit), max(a.time_limit, t.time_limit),
            a.size_evictions + t.size_evictions, a.time_evictions + t.time_evictions)
    return [acc[ns] for ns in sorted(acc)]


def broker_evictions(topics: Iterable[TopicMetrics]) -> dict[str, int]:
    """`quotaplane_pulsar_broker_storage_backlog_quota_exceeded_evictions_total` per quota type."""
    totals = {SIZE: 0, TIME: 0}
    for t in topics:
        totals[SIZE] += t.size_evictions
        totals[TIME] += t.time_evictions
    return totals
