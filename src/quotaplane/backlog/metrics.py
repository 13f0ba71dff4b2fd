"""Backlog-quota metrics with the names PIP-323 gives them, under quotaplane's prefix (spec: Metrics;
docs/metrics.md: a broker's own `pulsar_*` series and these never mix in one query).

- `quotaplane_pulsar_storage_backlog_age_seconds`: gauge; cluster, namespace, topic (left out by
  namespace)
- `quotaplane_pulsar_storage_backlog_quota_limit`, `..._limit_time`,
  `quotaplane_pulsar_storage_backlog_size`: gauges; cluster, namespace[, topic]
- `quotaplane_pulsar_storage_backlog_quota_exceeded_evictions_total`: counter; cluster,
  namespace[, topic], quota_type
- `quotaplane_pulsar_broker_storage_backlog_quota_exceeded_evictions_total`: counter; cluster,
  quota_type
- `quotaplane_pulsar_storage_backlog_quota_check_duration_seconds`: histogram (5, 10, 30, 60, 300);
  cluster

The values are a snapshot of the end of the evaluated period: gauges from each topic's last tick,
counters as totals. The collector is registered once in a `CollectorRegistry` and renders with
prometheus_client; it emits no `_created` samples.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from quotaplane.backlog.engine.model import SIZE, TIME
from quotaplane.backlog.engine.stats import TopicMetrics, broker_evictions, namespace_metrics

BACKLOG_AGE = "quotaplane_pulsar_storage_backlog_age_seconds"
QUOTA_LIMIT = "quotaplane_pulsar_storage_backlog_quota_limit"
QUOTA_LIMIT_TIME = "quotaplane_pulsar_storage_backlog_quota_limit_time"
BACKLOG_SIZE = "quotaplane_pulsar_storage_backlog_size"
EVICTIONS = "quotaplane_pulsar_storage_backlog_quota_exceeded_evictions"  # rendered with `_total`
# rendered with `_total`
BROKER_EVICTIONS = "quotaplane_pulsar_broker_storage_backlog_quota_exceeded_evictions"
CHECK_DURATION = "quotaplane_pulsar_storage_backlog_quota_check_duration_seconds"
CHECK_DURATION_BUCKETS = (5.0, 10.0, 30.0, 60.0, 300.0)
QUOTA_TYPES = (TIME, SIZE)


@dataclass(eq=False)
class BacklogMetrics(Collector):
    """The backlog metrics of one run.

    `topics` are per-topic values; with `topic_level` false they are aggregated by namespace
    (spec: Metrics) unless `namespaces` is given already aggregated (the pipeline aggregates
    with Spark). `check_durations` are the observed check durations in seconds.
    """

    cluster: str
    topic_level: bool
    topics: Sequence[TopicMetrics]
    check_durations: Sequence[float] = ()
    namespaces: Sequence[TopicMetrics] | None = None
    broker_totals: dict[str, int] | None = field(default=None)

    def collect(self) -> Iterator[Metric]:
        c = self.cluster
        if self.topic_level:
            rows, labels = list(self.topics), ["cluster", "namespace", "topic"]
        else:
            rows = list(self.namespaces) if self.namespaces is not None else namespace_metrics(self.topics)
            labels = ["cluster", "namespace"]

        def values(r: TopicMetrics) -> list[str]:
            return [c, r.namespace, r.topic] if self.topic_level else [c, r.namespace]  # type: ignore[list-item]

        if self.topic_level:
            age = GaugeMetricFamily(BACKLOG_AGE, "The age of the oldest unacknowledged message (backlog), "
                                    "-1 when unknown", labels=labels)
            for r in rows:
                age.add_metric(values(r), float(r.backlog_age_seconds if r.backlog_age_seconds is not None
                                                else -1))
            yield age
        limit = GaugeMetricFamily(QUOTA_LIMIT, "The size-based backlog quota in bytes", labels=labels)
        limit_time = GaugeMetricFamily(QUOTA_LIMIT_TIME, "The time-based backlog quota in seconds",
                                       labels=labels)
        size = GaugeMetricFamily(BACKLOG_SIZE, "The topic backlog size in bytes (the subscription with "
                                 "the oldest unacknowledged message)", labels=labels)
        evictions = CounterMetricFamily(EVICTIONS, "The number of times a backlog was evicted since it has "
                                        "exceeded its quota", labels=[*labels, "quota_type"])
        for r in rows:
            limit.add_metric(values(r), float(r.size_limit))
            limit_time.add_metric(values(r), float(r.time_limit))
            size.add_metric(values(r), float(r.backlog_size_bytes))
            evictions.add_metric([*values(r), TIME], float(r.time_evictions))
            evictions.add_metric([*values(r), SIZE], float(r.size_evictions))
        yield from (limit, limit_time, size, evictions)

        totals = self.broker_totals if self.broker_totals is not None else broker_evictions(self.topics)
        broker = CounterMetricFamily(
            BROKER_EVICTIONS, "The number of times a backlog was evicted since it has exceeded its quota, "
            "in broker level", labels=["cluster", "quota_type"])
        for quota_type in QUOTA_TYPES:
            broker.add_metric([c, quota_type], float(totals.get(quota_type, 0)))
        yield broker

        yield check_duration_histogram(c, self.check_durations)


def check_duration_histogram(cluster: str, durations: Sequence[float]) -> HistogramMetricFamily:
    """The check-duration histogram: cumulative counts per bucket bound (`le`), sum and count."""
    buckets = []
    for bound in CHECK_DURATION_BUCKETS:
        buckets.append((_le(bound), float(sum(1 for d in durations if d <= bound))))
    buckets.append(("+Inf", float(len(durations))))
    hist = HistogramMetricFamily(CHECK_DURATION, "The duration of the backlog quota check process.",
                                 labels=["cluster"])
    hist.add_metric([cluster], buckets, float(sum(durations)))
    return hist


def _le(bound: float) -> str:
    return str(bound)
