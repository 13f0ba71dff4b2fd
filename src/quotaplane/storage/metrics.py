"""Storage quota metrics (spec: Metrics), in Prometheus exposition format.

The spec's five metrics and the deprecated local-source ones, with the mapping to their JMX names
in docs/metrics.md. Every series carries `config` (main or compare), `cluster`, `source`
(cluster|local|strimzi) and `observing_broker_id` (empty for a cluster-wide evaluation). Values
are those at the end of the evaluated history (or of the single evaluation of the CLI).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from quotaplane.storage.config import StorageConfig
from quotaplane.storage.engine.decisions import Decision, effective_produce_limit

PREFIX = "quotaplane_storage_"
BASE_LABELS = ("config", "cluster", "source", "observing_broker_id")

# Prometheus name -> (spec JMX name, shipped plugin JMX name, help text)
METRICS: dict[str, tuple[str, str, str]] = {
    "throttle_factor": (
        "io.strimzi.kafka.quotas:type=LocalThrottleFactor,name=ThrottleFactor",
        "io.strimzi.kafka.quotas:type=ThrottleFactor,name=ThrottleFactor,observingBrokerId=<id>",
        "The most recently calculated throttle factor (0.0 to 1.0)."),
    "fallback_throttle_factor_applied": (
        "io.strimzi.kafka.quotas:type=LocalThrottleFactor,name=FallbackThrottleFactorApplied,reason=<reason>",
        "io.strimzi.kafka.quotas:type=ThrottleFactor,name=FallbackThrottleFactorApplied",
        "Times the fallback throttle factor was applied, by reason."),
    "throttling_volume": (
        "io.strimzi.kafka.quotas:type=LocalThrottleFactor,name=ThrottlingVolume,brokerId=<b>,volumeLogDir=<d>",
        "(none)",
        "The volume giving the current throttle factor (value: the factor); absent when not throttled."),
    "active_brokers": (
        "io.strimzi.kafka.quotas:type=ClusterVolumeSouce,name=ActiveBrokers",
        "io.strimzi.kafka.quotas:type=VolumeSource,name=ActiveBrokers,observingBrokerId=<id>",
        "Active brokers of the most recent successful collection."),
    "active_log_dirs": (
        "io.strimzi.kafka.quotas:type=ClusterVolumeSouce,name=ActiveLogDirs",
        "io.strimzi.kafka.quotas:type=VolumeSource,name=ActiveLogDirs,observingBrokerId=<id>",
        "Log dirs considered by the most recent successful collection."),
    "effective_produce_limit": (
        "(none; requested in strimzi/kafka-quotas-plugin#15)",
        "(none; the Produce gauge shows the configured quota)",
        "Produce quota times the throttle factor, never below 1 (absent when unlimited)."),
    "total_used_bytes": (
        "io.strimzi.kafka.quotas:type=StorageChecker,name=TotalStorageUsedBytes",
        "same (0.2.0, local source only)",
        "Deprecated local source: used bytes summed over the observing broker's log dirs."),
    "soft_limit_bytes": (
        "io.strimzi.kafka.quotas:type=StorageChecker,name=SoftLimitBytes",
        "same (0.2.0, local source only)",
        "Deprecated local source: client.quota.callback.static.storage.soft."),
    "hard_limit_bytes": (
        "io.strimzi.kafka.quotas:type=StorageChecker,name=HardLimitBytes",
        "same (0.2.0, local source only)",
        "Deprecated local source: client.quota.callback.static.storage.hard."),
}


@dataclass
class StorageMetricState:
    """The end-of-history state of one evaluation unit (a cluster, or a broker for the local source)."""

    config: str
    cluster: str
    source: str
    observing_broker_id: int | None
    throttle_factor: float
    throttling_broker_id: int | None = None
    throttling_log_dir: str | None = None
    fallbacks: Mapping[str, int] = field(default_factory=dict)
    active_brokers: int | None = None
    active_log_dirs: int | None = None
    effective_produce_limit: float | None = None
    used_bytes: int | None = None
    legacy_soft_bytes: int | None = None
    legacy_hard_bytes: int | None = None

    def labels(self) -> list[str]:
        observer = "" if self.observing_broker_id is None else str(self.observing_broker_id)
        return [self.config, self.cluster, self.source, observer]


def state_from_decision(decision: Decision, config: StorageConfig, label: str = "main",
                        cluster: str = "") -> StorageMetricState:
    """The metric state after one evaluation (the CLI's single decision)."""
    local = decision.source == "local"
    return StorageMetricState(
        config=label, cluster=cluster, source=decision.source,
        observing_broker_id=decision.observing_broker_id, throttle_factor=decision.throttle_factor,
        throttling_broker_id=decision.throttling_broker_id, throttling_log_dir=decision.throttling_log_dir,
        fallbacks={decision.fallback_reason: 1} if decision.fallback_applied and decision.fallback_reason
        else {},
        active_brokers=decision.active_brokers if decision.collection_error is None else None,
        active_log_dirs=decision.active_log_dirs if decision.collection_error is None else None,
        effective_produce_limit=effective_produce_limit(config.quotas.produce, decision.throttle_factor),
        used_bytes=decision.used_bytes if local else None,
        legacy_soft_bytes=config.legacy_soft_bytes if local else None,
        legacy_hard_bytes=config.legacy_hard_bytes if local else None,
    )


class StorageMetrics(Collector):
    """A fixed set of storage metric states, exposed as Prometheus metric families (register it in a
    `CollectorRegistry`)."""

    def __init__(self, states: Iterable[StorageMetricState]) -> None:
        self.states = list(states)

    def describe(self) -> Iterator[Metric]:
        return self.collect()

    def collect(self) -> Iterator[Metric]:
        def gauge(name: str, extra: tuple[str, ...] = ()) -> GaugeMetricFamily:
            return GaugeMetricFamily(PREFIX + name, METRICS[name][2], labels=[*BASE_LABELS, *extra])

        factor = gauge("throttle_factor")
        fallback = CounterMetricFamily(PREFIX + "fallback_throttle_factor_applied",
                                       METRICS["fallback_throttle_factor_applied"][2],
                                       labels=[*BASE_LABELS, "reason"])
        volume = gauge("throttling_volume", ("broker_id", "log_dir"))
        brokers, dirs = gauge("active_brokers"), gauge("active_log_dirs")
        produce = gauge("effective_produce_limit")
        used, soft, hard = gauge("total_used_bytes"), gauge("soft_limit_bytes"), gauge("hard_limit_bytes")
        for s in self.states:
            labels = s.labels()
            factor.add_metric(labels, s.throttle_factor)
            for reason, count in sorted(s.fallbacks.items()):
                fallback.add_metric([*labels, reason], count)
            if s.throttling_broker_id is not None:
                volume.add_metric([*labels, str(s.throttling_broker_id), s.throttling_log_dir or ""],
                                  s.throttle_factor)
            if s.active_brokers is not None:
                brokers.add_metric(labels, s.active_brokers)
            if s.active_log_dirs is not None:
                dirs.add_metric(labels, s.active_log_dirs)
            if s.effective_produce_limit is not None:
                produce.add_metric(labels, s.effective_produce_limit)
            if s.source == "local":
                if s.used_bytes is not None:
                    used.add_metric(labels, s.used_bytes)
                if s.legacy_soft_bytes is not None:
                    soft.add_metric(labels, s.legacy_soft_bytes)
                if s.legacy_hard_bytes is not None:
                    hard.add_metric(labels, s.legacy_hard_bytes)
        yield from (factor, fallback, volume, brokers, dirs, produce)
        if any(s.source == "local" for s in self.states):
            yield from (used, soft, hard)
