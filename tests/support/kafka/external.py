"""A Kafka cluster the tests do not start: `QUOTAPLANE_KAFKA_BOOTSTRAP=host:port[,...]` points the tests
that use the session cluster at it (and `QUOTAPLANE_KAFKA_METRICS=host:port[,...]` at its brokers' JMX
exporter endpoints, in node order, for the tests that read broker metrics).

Nothing is started, stopped or mounted: a test that kills, restarts or fills a node, or installs a
plugin, is marked `own_kafka` and is skipped with the reason `NEEDS_OWN`; calling such an operation
anyway raises `NeedsOwnCluster`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import NoReturn

BOOTSTRAP_ENV = "QUOTAPLANE_KAFKA_BOOTSTRAP"
METRICS_ENV = "QUOTAPLANE_KAFKA_METRICS"
NEEDS_OWN = (f"needs the project's own Kafka cluster (it stops, kills, restarts or fills brokers, or "
             f"installs a plugin), and {BOOTSTRAP_ENV} points the tests at another one: unset it to run this")


class NeedsOwnCluster(RuntimeError):
    """An operation only the project's own cluster allows was asked of an external one."""


def external_bootstrap() -> str | None:
    return os.environ.get(BOOTSTRAP_ENV) or None


@dataclass
class ExternalCluster:
    bootstrap: str
    metrics: dict[int, str] = field(default_factory=dict)
    nodes: dict[int, object] = field(default_factory=dict)  # none known: nothing here is ours

    @classmethod
    def from_env(cls) -> ExternalCluster:
        bootstrap = external_bootstrap()
        if bootstrap is None:
            raise NeedsOwnCluster(f"{BOOTSTRAP_ENV} is not set")
        endpoints = [e.strip() for e in os.environ.get(METRICS_ENV, "").split(",") if e.strip()]
        return cls(bootstrap, {i: e for i, e in enumerate(endpoints, start=1)})

    def metrics_targets(self) -> dict[int, str]:
        return dict(self.metrics)

    def notes(self) -> list[str]:
        return []

    def _refuse(self, *_: object, **__: object) -> NoReturn:
        raise NeedsOwnCluster(NEEDS_OWN)

    node = log_dir = mount_path = log_tail = stop_node = kill_node = restart_node = _refuse

    def close(self, keep_work: bool = False) -> None:
        pass
