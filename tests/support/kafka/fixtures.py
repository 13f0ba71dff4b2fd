"""The pytest fixtures of the real Kafka clusters and the real Prometheus, one of each per test
session (per xdist worker), and the collection rules that go with them (tests/conftest.py imports
them; docs/real-kafka.md, "In the tests").

- `kafka_cluster`: 3 combined KRaft nodes with the JMX exporter agent, or the external cluster of
  `QUOTAPLANE_KAFKA_BOOTSTRAP`.
- `strimzi_cluster`: 3 nodes with the Strimzi quotas plugin installed (never external).
- `prometheus`: a Prometheus server; `kafka_metrics` / `strimzi_metrics`: that server scraping the
  cluster's JMX exporters (job `kafka` / `kafka-strimzi`).

Every test that uses a cluster's fixture runs in that cluster's xdist group (`--dist loadgroup`), so
each cluster starts once; a test must not use both clusters (it would form a third group and start
both again on its worker).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest

from tests.support.kafka.cluster import MIB, KafkaCluster
from tests.support.kafka.external import NEEDS_OWN, ExternalCluster, external_bootstrap
from tests.support.kafka.prometheus import Prometheus
from tests.support.kafka.strimzi import plugin_classpath, plugin_node_properties, plugin_properties

KAFKA_GROUP = "kafka"
STRIMZI_GROUP = "kafka-strimzi"
GROUPS = {"kafka_cluster": KAFKA_GROUP, "kafka_metrics": KAFKA_GROUP,
          "strimzi_cluster": STRIMZI_GROUP, "strimzi_metrics": STRIMZI_GROUP}
OWN_ONLY = {"strimzi_cluster", "strimzi_metrics"}  # fixtures an external cluster cannot provide

STRIMZI_VOLUME = 64 * MIB
STRIMZI_HEADROOM = 24 * MIB  # the plugin's limit: this much below each volume's free bytes at start
STRIMZI_SETTINGS = {
    "produce": str(50 * MIB),  # bytes/s shared by all producers while the factor is 1
    "storage.check-interval": "2",  # seconds; its admin calls time out after check-interval - 1
}


def assign_groups(items: list[pytest.Item]) -> None:
    """Put each test in its cluster's xdist group, and skip (saying why) the tests that need the
    project's own cluster when `QUOTAPLANE_KAFKA_BOOTSTRAP` names another."""
    external = external_bootstrap() is not None
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        groups = sorted({GROUPS[name] for name in names if name in GROUPS})
        for group in groups:
            item.add_marker(pytest.mark.xdist_group(group))
        if external and (item.get_closest_marker("own_kafka") or names & OWN_ONLY):
            item.add_marker(pytest.mark.skip(reason=NEEDS_OWN))


class GroupIds:
    """Makes xdist's `--dist loadgroup` work on pytest 9: xdist 3.8 (the newest) marks a grouped test
    by appending `@<group>` to `item._nodeid`, which pytest 9 no longer reads (a node id is now
    `str(item._id)`), so the controller would see no group at all. Registered by tests/conftest.py,
    this runs after xdist's hook and carries the suffix into `_id`, as pytest 8 did."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        try:
            from _pytest.nodeid import NodeId
        except ImportError:  # pytest 8 and older read `_nodeid`: nothing to carry
            return
        for item in items:
            suffixed = item.__dict__.get("_nodeid")
            if isinstance(suffixed, str) and suffixed != item.nodeid:
                item._id = NodeId.parse(suffixed)


def _report(cluster: KafkaCluster) -> None:
    for note in cluster.notes():
        warnings.warn(f"Kafka test cluster: {note}", stacklevel=2)


@pytest.fixture(scope="session")
def kafka_cluster() -> Iterator[KafkaCluster | ExternalCluster]:
    if external_bootstrap() is not None:
        yield ExternalCluster.from_env()
        return
    with KafkaCluster(3, jmx_exporter=True) as cluster:
        _report(cluster)
        yield cluster


@pytest.fixture(scope="session")
def strimzi_cluster() -> Iterator[KafkaCluster]:
    if external_bootstrap() is not None:
        pytest.skip(NEEDS_OWN)
    cluster = KafkaCluster(3, volume_bytes=STRIMZI_VOLUME, jmx_exporter=True,
                           extra_classpath=plugin_classpath(), node_properties=plugin_node_properties)
    try:
        cluster.prepare()
        free = min(node.volume.free_bytes() for node in cluster.nodes.values())
        cluster.properties.update(plugin_properties({
            **STRIMZI_SETTINGS,
            "storage.per.volume.limit.min.available.bytes": str(free - STRIMZI_HEADROOM)}))
        cluster.start()
        _report(cluster)
        yield cluster
    finally:
        cluster.close()


@pytest.fixture(scope="session")
def prometheus() -> Iterator[Prometheus]:
    with Prometheus() as server:
        yield server


def _scraping(prometheus: Prometheus, job: str, cluster: KafkaCluster | ExternalCluster) -> Prometheus:
    targets = cluster.metrics_targets()
    if not targets:
        pytest.skip("the external cluster's JMX exporter endpoints are not given "
                    "(QUOTAPLANE_KAFKA_METRICS=host:port,...)")
    prometheus.scrape(job, list(targets.values()))
    prometheus.wait_up(job, len(targets))
    return prometheus


@pytest.fixture(scope="session")
def kafka_metrics(prometheus: Prometheus, kafka_cluster: KafkaCluster | ExternalCluster) -> Prometheus:
    """Prometheus scraping the session cluster's brokers every second, as job `kafka`."""
    return _scraping(prometheus, "kafka", kafka_cluster)


@pytest.fixture(scope="session")
def strimzi_metrics(prometheus: Prometheus, strimzi_cluster: KafkaCluster) -> Prometheus:
    """Prometheus scraping the plugin cluster's brokers every second, as job `kafka-strimzi`."""
    return _scraping(prometheus, "kafka-strimzi", strimzi_cluster)
