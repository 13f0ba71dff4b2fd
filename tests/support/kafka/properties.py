"""The `server.properties` of one node of the test cluster (docs/real-kafka.md, "The cluster").

Every node is a combined KRaft node (`process.roles=broker,controller`) on loopback; the settings
below are the ones that differ from a stock `config/server.properties`, each for the reason given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.support.kafka.ports import HOST


@dataclass(frozen=True)
class NodePorts:
    broker: int
    controller: int
    metrics: int | None = None  # the JMX exporter's HTTP port, when the agent is attached


def voters(ports: Mapping[int, NodePorts]) -> str:
    """`controller.quorum.voters`: static voters, so StorageTool formats without a quorum flag."""
    return ",".join(f"{node}@{HOST}:{p.controller}" for node, p in sorted(ports.items()))


def bootstrap(ports: Mapping[int, NodePorts]) -> str:
    return ",".join(f"{HOST}:{p.broker}" for _, p in sorted(ports.items()))


def server_properties(node_id: int, ports: Mapping[int, NodePorts], log_dir: Path, metadata_dir: Path,
                      quota_window_num: int, extra: Mapping[str, str]) -> dict[str, str]:
    own = ports[node_id]
    replicas = str(min(3, len(ports)))  # internal topics survive one node down where there are 3
    props = {
        "process.roles": "broker,controller",
        "node.id": str(node_id),
        "controller.quorum.voters": voters(ports),
        "listeners": f"PLAINTEXT://{HOST}:{own.broker},CONTROLLER://{HOST}:{own.controller}",
        "advertised.listeners": f"PLAINTEXT://{HOST}:{own.broker}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        # the partition data on the node's own small volume, the metadata log off it: a volume
        # filled by a test must not take the quorum down with it
        "log.dirs": str(log_dir),
        "metadata.log.dir": str(metadata_dir),
        # internal topics: as many replicas as the cluster has nodes (at most 3), one in sync enough
        "offsets.topic.replication.factor": replicas,
        "offsets.topic.num.partitions": "6",
        "transaction.state.log.replication.factor": replicas,
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "6",
        "share.coordinator.state.topic.replication.factor": replicas,
        "share.coordinator.state.topic.min.isr": "1",
        "share.coordinator.state.topic.num.partitions": "6",
        "group.initial.rebalance.delay.ms": "0",
        # client quotas react in seconds: a 1 s sample, few samples in the rate window
        "quota.window.size.seconds": "1",
        "quota.window.num": str(quota_window_num),
        # a deleted topic's files go within a second, so a test can empty a volume it filled
        "file.delete.delay.ms": "1000",
        # two shared cores: few threads, and a log cleaner that does not take 128 MiB of heap
        "num.network.threads": "2",
        "num.io.threads": "2",
        "background.threads": "2",
        "num.recovery.threads.per.data.dir": "1",
        "log.cleaner.dedupe.buffer.size": str(16 << 20),
    }
    props.update(extra)
    return props


def render(props: Mapping[str, str]) -> str:
    return "".join(f"{key}={value}\n" for key, value in props.items())
