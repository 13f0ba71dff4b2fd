"""The whole backlog evaluation as composed transforms: snapshots -> checks, evictions, stats.

    decided   = snapshots.transform(attach_quotas).transform(rank_subscriptions).transform(decide)
    checks    = decided.transform(topic_rows).transform(with_counters)   one row per (tick, topic)
    evictions = decided.transform(evictions)                             per evicted subscription
    stats, partitioned stats, metric rows                                from each topic's last tick
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame

from quotaplane.backlog.config import BacklogPolicies
from quotaplane.backlog.spark import stats
from quotaplane.backlog.spark.checks import decide, rank_subscriptions, topic_rows
from quotaplane.backlog.spark.eviction import evictions
from quotaplane.backlog.spark.resolve import attach_quotas


def decided_rows(snapshots: DataFrame, policies: BacklogPolicies) -> DataFrame:
    """Every snapshot row with its topic's quotas and decision (rank 1 = the oldest subscription)."""
    return (snapshots.transform(attach_quotas(policies)).transform(rank_subscriptions)
            .transform(decide(policies.broker.precise_time_check)))


def checks_of(decided: DataFrame) -> DataFrame:
    """One row per (tick, topic) with the cumulative eviction counters."""
    return decided.transform(topic_rows).transform(stats.with_counters)


def evictions_of(decided: DataFrame, policies: BacklogPolicies) -> DataFrame:
    return decided.transform(evictions(policies.broker.precise_time_check))


@dataclass
class Derived:
    """What the checks add up to (each from every topic's last tick)."""

    topic_stats: DataFrame
    partitioned_stats: DataFrame
    topic_metrics: DataFrame
    namespace_metrics: DataFrame


def derive(checks: DataFrame) -> Derived:
    latest = stats.latest(checks)
    topic_stats = stats.topic_stats(latest)
    topic_metrics = stats.topic_metric_rows(latest)
    return Derived(topic_stats, stats.partitioned_stats(topic_stats), topic_metrics,
                   stats.namespace_metric_rows(topic_metrics))
