"""What the live service exports on /metrics: the spec's storage metrics of its last decision (with
the fallbacks counted over every round, `config="live"`), and the service's own: the last round's
Unix time and duration, rounds evaluated, failed collection rounds by reason, client quota
alterations by result (`applied`, `failed`, `dry_run`), and the produce quota every managed entity
has under the current factor. The names and meanings are in docs/metrics.md. With them the forecast
families of the last round's forecast (`ForecastMetrics`, `config="live"`; docs/live.md) and the
partition replicas left out of collection rounds, by the rule they broke.

Every series names one cluster: the cluster of the last decided round (`--cluster` of a live
service; the recorded cluster of a replay), or `--cluster` before the first round, so the storage
and the forecast families of one scrape always agree, and agree with `/decision` and the log.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from quotaplane.forecast.engine.volumes import VolumeForecast
from quotaplane.forecast.metrics import ForecastMetrics
from quotaplane.live.admin import QuotaEntity
from quotaplane.storage.config import StorageConfig
from quotaplane.storage.engine.decisions import Decision
from quotaplane.storage.metrics import StorageMetrics, state_from_decision


@dataclass
class LiveStatus:
    """What the service knows after its last round; read at every scrape."""

    config: StorageConfig
    cluster: str
    decision: Decision | None = None
    decision_row: dict[str, object] | None = None
    round: int | None = None  # the number of the last round, as its log line and `--state` count it
    last_round_unix: float | None = None
    last_round_seconds: float | None = None
    rounds: int = 0
    fallbacks: Counter[str] = field(default_factory=Counter)
    collection_errors: Counter[str] = field(default_factory=Counter)
    alterations: Counter[str] = field(default_factory=Counter)
    targets: dict[QuotaEntity, float | None] = field(default_factory=dict)
    forecasts: list[VolumeForecast] = field(default_factory=list)
    dropped_replicas: Counter[str] = field(default_factory=Counter)


class LiveMetrics(Collector):
    def __init__(self, status: LiveStatus) -> None:
        self.status = status

    def collect(self) -> Iterator[Metric]:
        s = self.status
        cluster = self.cluster()
        if s.decision is not None:
            state = state_from_decision(s.decision, s.config, label="live", cluster=cluster)
            state.fallbacks = dict(s.fallbacks)
            yield from StorageMetrics([state]).collect()
        last = GaugeMetricFamily("quotaplane_storage_last_round_timestamp_seconds",
                                 "Unix time of the last finished collection round.")
        if s.last_round_unix is not None:
            last.add_metric([], s.last_round_unix)
        yield last
        duration = GaugeMetricFamily("quotaplane_storage_round_duration_seconds",
                                     "How long the last round took (collect, decide, enforce).")
        if s.last_round_seconds is not None:
            duration.add_metric([], s.last_round_seconds)
        yield duration
        rounds = CounterMetricFamily("quotaplane_storage_rounds", "Collection rounds evaluated.")
        rounds.add_metric([], s.rounds)
        yield rounds
        errors = CounterMetricFamily("quotaplane_storage_collection_errors",
                                     "Failed collection rounds, by reason.", labels=["reason"])
        for reason, count in sorted(s.collection_errors.items()):
            errors.add_metric([reason], count)
        yield errors
        alterations = CounterMetricFamily("quotaplane_client_quota_alterations",
                                          "Client quota entity changes, by result.", labels=["result"])
        for result, count in sorted(s.alterations.items()):
            alterations.add_metric([result], count)
        yield alterations
        quota = GaugeMetricFamily("quotaplane_client_effective_produce_quota_bytes_per_second",
                                  "The produce quota each managed entity has under the current factor.",
                                  labels=["user", "client_id"])
        for (user, client), value in sorted(s.targets.items(), key=lambda i: (i[0][0] or "", i[0][1] or "")):
            if value is not None:
                quota.add_metric([user or "", client or ""], value)
        yield quota
        dropped = CounterMetricFamily("quotaplane_storage_partition_sizes_dropped",
                                      "Partition replicas left out of collection rounds (a size, "
                                      "partition or topic the partition_sizes schema rejects), by rule.",
                                      labels=["reason"])
        for reason, count in sorted(s.dropped_replicas.items()):
            dropped.add_metric([reason], count)
        yield dropped
        forecasts = [f if f.cluster == cluster else replace(f, cluster=cluster) for f in s.forecasts]
        yield from ForecastMetrics(forecasts, [], config="live").collect()

    def cluster(self) -> str:
        """The one `cluster` label of the service's series (the module's docstring)."""
        row = self.status.decision_row
        named = row.get("cluster") if row is not None else None
        return str(named) if named else self.status.cluster
