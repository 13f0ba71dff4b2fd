"""What the live service exports on /metrics: every decider's families as of its last round (the
spec's storage metrics with `config="live"`, the forecast's, ...) and the service's own: the last
round's Unix time and duration, rounds evaluated, client quota alterations by result (`applied`,
`failed`, `dry_run`), the produce quota every managed entity has under the current factor, the
observed rows the readers' rules left out (by input and rule), the failures of its sources (by
source and reason) and of its sinks (by sink), and the landed rounds given up. The names and
meanings are in docs/metrics.md.

Every series of one scrape names one cluster: each decider labels its families with the cluster of
the rows it decided (`--cluster` for a live cluster's, the recorded cluster of a replay's), so the
storage and the forecast families agree with each other, with `/decision` and with the log.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from quotaplane.core.live import Decider
from quotaplane.live.admin import QuotaEntity


@dataclass
class LiveStatus:
    """What the service knows after its last round; read at every scrape and HTTP request."""

    cluster: str
    number: int | None = None  # the last round's number (the state's counter), as the log gives it
    last_round_unix: float | None = None
    last_round_seconds: float | None = None
    rounds: int = 0
    alterations: Counter[str] = field(default_factory=Counter)
    targets: dict[QuotaEntity, float | None] = field(default_factory=dict)
    rejected: Counter[tuple[str, str]] = field(default_factory=Counter)
    source_errors: Counter[tuple[str, str]] = field(default_factory=Counter)
    sink_failures: Counter[str] = field(default_factory=Counter)
    landing_dropped_rounds: int = 0
    documents: dict[str, Any] = field(default_factory=dict)  # endpoint path -> its JSON document


def _counter(name: str, text: str, labels: Sequence[str], values: Counter[Any]) -> CounterMetricFamily:
    family = CounterMetricFamily(name, text, labels=list(labels))
    for key, count in sorted(values.items()):
        family.add_metric(list(key) if isinstance(key, tuple) else [key], count)
    return family


class LiveMetrics(Collector):
    def __init__(self, status: LiveStatus, deciders: Sequence[Decider] = ()) -> None:
        self.status = status
        self.deciders = list(deciders)

    def collect(self) -> Iterator[Metric]:
        s = self.status
        for decider in self.deciders:
            yield from decider.metrics()
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
        yield _counter("quotaplane_client_quota_alterations", "Client quota entity changes, by result.",
                       ["result"], s.alterations)
        quota = GaugeMetricFamily("quotaplane_client_effective_produce_quota_bytes_per_second",
                                  "The produce quota each managed entity has under the current factor.",
                                  labels=["user", "client_id"])
        for (user, client), value in sorted(s.targets.items(), key=lambda i: (i[0][0] or "", i[0][1] or "")):
            if value is not None:
                quota.add_metric([user or "", client or ""], value)
        yield quota
        yield _counter("quotaplane_live_rejected_rows",
                       "Observed rows left out of a round because the readers' rules reject them, by input "
                       "and rule (docs/telemetry.md).", ["input", "reason"], s.rejected)
        yield _counter("quotaplane_live_source_errors", "Failures met by a source in a round, by source and "
                       "reason.", ["source", "reason"], s.source_errors)
        yield _counter("quotaplane_live_sink_failures", "Rounds in which a sink (landing, state, "
                       "enforcement, notices) failed; it is retried at the next round.", ["sink"],
                       s.sink_failures)
        dropped = CounterMetricFamily("quotaplane_live_landing_dropped_rounds",
                                      "Rounds given up by the landing directory after it stayed unwritable "
                                      "longer than its queue holds.")
        dropped.add_metric([], s.landing_dropped_rounds)
        yield dropped
