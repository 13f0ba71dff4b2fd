"""The session's real Kafka cluster itself (tests/support/kafka; docs/real-kafka.md): its nodes serve,
each broker's DescribeLogDirs v4 sizes are those of its own volume, and a node killed with -9 comes
back on its data."""

from __future__ import annotations

import os
import signal
import uuid

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.support.kafka.admin import create_topic, log_dir_sizes
from tests.support.kafka.cluster import MIB, KafkaCluster
from tests.support.kafka.node import NodeFailed
from tests.support.kafka.ports import accepts


def active_brokers(bootstrap: str) -> dict[int, str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # alive until its future is done
    description = admin.describe_cluster().result(30)
    return {node.id: f"{node.host}:{node.port}" for node in description.nodes}


def produce(bootstrap: str, topic: str, values: list[bytes], partition: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all"})
    errors: list[object] = []
    for value in values:
        producer.produce(topic, value, partition=partition, on_delivery=lambda e, _: e and errors.append(e))
    assert producer.flush(30) == 0 and errors == []


def consume(bootstrap: str, topic: str, count: int, partition: int = 0) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
    out: list[bytes] = []
    try:
        for _ in range(300):
            if len(out) == count:
                break
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                out.append(message.value())
    finally:
        consumer.close()
    return out


def test_every_node_serves_and_a_message_goes_round(kafka_cluster: KafkaCluster) -> None:
    brokers = active_brokers(kafka_cluster.bootstrap)
    if kafka_cluster.nodes:  # the project's own cluster: 3 nodes at the addresses it announced
        assert brokers == {i: node.address for i, node in kafka_cluster.nodes.items()}
        assert sorted(brokers) == [1, 2, 3]
    topic = f"round-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_cluster.bootstrap, topic, partitions=1, replicas=min(3, len(brokers)))
    produce(kafka_cluster.bootstrap, topic, [b"a", b"b"])
    assert consume(kafka_cluster.bootstrap, topic, 2) == [b"a", b"b"]


def test_the_cluster_tests_run_in_their_xdist_group(request: pytest.FixtureRequest,
                                                   kafka_cluster: KafkaCluster) -> None:
    """Under `--dist loadgroup` every test of the session cluster carries its group in its id, so one
    worker runs them all and the cluster starts once (tests/support/kafka/fixtures.py)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        assert request.node.nodeid.endswith("@kafka")
    assert request.node.get_closest_marker("xdist_group").args == ("kafka",)


@pytest.mark.own_kafka
def test_each_log_dir_is_on_its_own_volume_off_the_metadata_log(kafka_cluster: KafkaCluster) -> None:
    devices = set()
    for node in kafka_cluster.nodes.values():
        assert node.log_dir.is_relative_to(node.volume.path) and node.log_dir.is_dir()
        assert not node.metadata_dir.is_relative_to(node.volume.path)
        if node.volume.mounted:
            assert os.path.ismount(node.volume.path)
            assert node.volume.total_bytes() == node.volume.size_bytes
        devices.add(os.stat(node.log_dir).st_dev)
    assert len(devices) == len(kafka_cluster.nodes) or kafka_cluster.notes()


@pytest.mark.own_kafka
def test_describe_log_dirs_v4_sizes_are_the_volumes_statvfs(kafka_cluster: KafkaCluster) -> None:
    """KIP-827: TotalBytes/UsableBytes are `getTotalSpace`/`getUsableSpace` of the log dir's file store
    (f_blocks and f_bavail times f_frsize), read per request: a ballast of 8 MiB on node 2's volume
    shows in its usable bytes. The broker's read lies between two statvfs reads around the request
    (whatever the brokers write meanwhile)."""
    ballast = kafka_cluster.node(2).volume.fill("ballast-sizes", 8 * MIB)
    try:
        nodes = kafka_cluster.nodes
        before = {i: (n.volume.total_bytes(), n.volume.free_bytes()) for i, n in nodes.items()}
        sizes = log_dir_sizes(kafka_cluster.bootstrap, sorted(nodes))
        after = {i: (n.volume.total_bytes(), n.volume.free_bytes()) for i, n in nodes.items()}
    finally:
        ballast.unlink()
    for node_id, node in nodes.items():
        assert list(sizes[node_id]) == [str(node.log_dir)]
        total, usable = sizes[node_id][str(node.log_dir)]
        assert total == before[node_id][0] == after[node_id][0]
        low, high = sorted((before[node_id][1], after[node_id][1]))
        assert low <= usable <= high, (node_id, before[node_id], usable, after[node_id])
    if nodes[2].volume.mounted:
        assert sizes[2][str(nodes[2].log_dir)][1] <= nodes[2].volume.size_bytes - 8 * MIB


@pytest.mark.own_kafka
def test_a_node_killed_with_9_comes_back_on_its_data(kafka_cluster: KafkaCluster) -> None:
    topic = f"kill-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_cluster.bootstrap, topic, assignment=[[3]])  # the one replica on node 3
    produce(kafka_cluster.bootstrap, topic, [b"before-kill"])
    node = kafka_cluster.node(3)
    kafka_cluster.kill_node(3)
    assert node.process is not None and node.process.returncode == -signal.SIGKILL
    assert not accepts(node.ports.broker)
    kafka_cluster.restart_node(3)
    assert node.alive() and accepts(node.ports.broker)
    assert consume(kafka_cluster.bootstrap, topic, 1) == [b"before-kill"]
    assert sorted(active_brokers(kafka_cluster.bootstrap)) == [1, 2, 3]


@pytest.mark.own_kafka
def test_a_node_that_cannot_start_fails_with_the_tail_of_its_log() -> None:
    """Its own one-node cluster (not the session's): formatted, its controller port taken; then free,
    with a start deadline shorter than any start."""
    import socket

    cluster = KafkaCluster(1, volume_bytes=8 * MIB, port_retries=0, heap="128m")
    try:
        node = cluster.node(1)
        with socket.socket() as squatter:
            squatter.bind(("127.0.0.1", node.ports.controller))
            squatter.listen()
            with pytest.raises(NodeFailed) as failure:
                cluster.start()
        text = str(failure.value)
        assert "Kafka node 1 failed to start" in text or "Kafka node 1 exited during start-up" in text
        assert "Address already in use" in text and str(node.server_log) in text
        cluster.start_timeout = 0.5
        with pytest.raises(NodeFailed, match=r"Kafka node 1 was not up within 0\.5 s") as late:
            cluster.start()
        assert "--- last" in str(late.value)
    finally:
        cluster.close()
