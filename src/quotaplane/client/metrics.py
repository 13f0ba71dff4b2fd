"""The producer's metrics (PIP-385 "Metrics"; names in docs/notices.md, section "The producer").

- `quotaplane_client_producer_throttled_times_total{reason, topic}`: `ThrottleProducer` commands
  honoured, PIP-385's client counter `pulsar.client.producer.throttled_times{reason, topic}`;
- `quotaplane_client_notice_errors_total{error}`: commands the client ignored (a bad command:
  `malformed`, `unknown_reason`, `negative_pause`, `duplicate_request_id`, `unknown_producer`,
  `unexpected_command`; `handler_failed`: applying it raised) and connection faults (`framing`,
  `disconnected`, `connect_failed`).

A collector of `prometheus_client` rendering counters without `_created` samples, like quotaplane's
other metrics (docs/metrics.md). Every producer of a process shares `default_metrics()`, registered
once in prometheus_client's global registry; tests and embedders pass their own `ClientMetrics`.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

THROTTLED_TIMES = "quotaplane_client_producer_throttled_times"
NOTICE_ERRORS = "quotaplane_client_notice_errors"


class ClientMetrics(Collector):
    """Counts of the notices a client received; thread-safe."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self._lock = threading.Lock()
        self._throttled: Counter[tuple[str, str]] = Counter()
        self._errors: Counter[str] = Counter()
        if registry is not None:
            registry.register(self)

    def throttled(self, reason: str, topic: str) -> None:
        with self._lock:
            self._throttled[(reason, topic)] += 1

    def error(self, error: str) -> None:
        with self._lock:
            self._errors[error] += 1

    def throttled_times(self, reason: str, topic: str) -> int:
        with self._lock:
            return self._throttled[(reason, topic)]

    def errors(self, error: str) -> int:
        with self._lock:
            return self._errors[error]

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            throttled, errors = dict(self._throttled), dict(self._errors)
        family = CounterMetricFamily(THROTTLED_TIMES, "ThrottleProducer commands honoured (PIP-385 "
                                     "pulsar.client.producer.throttled_times).", labels=["reason", "topic"])
        for (reason, topic), n in sorted(throttled.items()):
            family.add_metric([reason, topic], n)
        yield family
        family = CounterMetricFamily(NOTICE_ERRORS, "Notice commands ignored and notice connection faults.",
                                     labels=["error"])
        for error, n in sorted(errors.items()):
            family.add_metric([error], n)
        yield family


_default: ClientMetrics | None = None
_default_lock = threading.Lock()


def default_metrics() -> ClientMetrics:
    """The process's shared `ClientMetrics`, registered in prometheus_client's global registry."""
    global _default
    with _default_lock:
        if _default is None:
            _default = ClientMetrics(REGISTRY)
        return _default
