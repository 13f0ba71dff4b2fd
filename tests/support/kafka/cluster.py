"""A Kafka cluster of N combined KRaft nodes on loopback, started from the resolved jars.

Each node has its own small volume for its log dir (`volume.py`), its metadata log beside it, and
its own `logs/server.log`; the JMX exporter agent can serve each node's metrics on a port of its
own. `start()` returns once every node serves; a node that is not up within `start_timeout`
seconds (60 by default) raises `NodeFailed` with the tail of its log.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from tests.support.kafka.node import Node, NodeFailed
from tests.support.kafka.ports import free_ports
from tests.support.kafka.properties import NodePorts, bootstrap, server_properties
from tests.support.kafka.release import KAFKA, Release
from tests.support.kafka.volume import OWNER_FILE, Volume, release_stale

MIB = 1 << 20
PREFIX = "quotaplane-kafka-"
NodeProperties = Callable[[Node, str], Mapping[str, str]]  # (node, bootstrap servers) -> properties


class KafkaCluster:
    """A test cluster; use as a context manager or call `start()` and `close()`."""

    def __init__(self, nodes: int = 3, *, volume_bytes: int = 128 * MIB, release: Release = KAFKA,
                 properties: Mapping[str, str] | None = None, node_properties: NodeProperties | None = None,
                 extra_classpath: Sequence[str] = (), jmx_exporter: bool = False, quota_window_num: int = 3,
                 heap: str = "320m", start_timeout: float = 60.0, port_retries: int = 1,
                 work_dir: Path | None = None) -> None:
        if nodes < 1:
            raise ValueError(f"nodes={nodes}: a cluster needs at least one node")
        self.release = release
        self.properties = dict(properties or {})
        self.node_properties = node_properties
        self.quota_window_num = quota_window_num
        self.start_timeout = start_timeout
        self.port_retries = port_retries
        release_stale(Path(tempfile.gettempdir()), PREFIX)
        self.work = work_dir or Path(tempfile.mkdtemp(prefix=PREFIX))
        self.work.mkdir(parents=True, exist_ok=True)
        (self.work / OWNER_FILE).write_text(f"{os.getpid()}\n")
        self.cluster_id = ""
        self.nodes: dict[int, Node] = {}
        agent = _jmx_exporter() if jmx_exporter else None
        ports = self._pick_ports(nodes, agent is not None)
        for node_id in range(1, nodes + 1):
            node_work = self.work / f"node-{node_id}"
            node_work.mkdir(exist_ok=True)
            self.nodes[node_id] = Node(node_id, node_work, ports[node_id],
                                       Volume(node_work / "volume", volume_bytes), release, heap=heap,
                                       extra_classpath=tuple(extra_classpath), jmx_exporter=agent)

    @staticmethod
    def _pick_ports(nodes: int, metrics: bool) -> dict[int, NodePorts]:
        per_node = 3 if metrics else 2
        flat = free_ports(nodes * per_node)
        return {i + 1: NodePorts(flat[i * per_node], flat[i * per_node + 1],
                                 flat[i * per_node + 2] if metrics else None) for i in range(nodes)}

    # -- what tests read -------------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        return bootstrap({i: n.ports for i, n in self.nodes.items()})

    def node(self, node_id: int) -> Node:
        try:
            return self.nodes[node_id]
        except KeyError:
            raise KeyError(f"no node {node_id} (nodes: {sorted(self.nodes)})") from None

    def log_dir(self, node_id: int) -> Path:
        return self.node(node_id).log_dir

    def mount_path(self, node_id: int) -> Path:
        return self.node(node_id).volume.path

    def log_tail(self, node_id: int, lines: int = 40) -> str:
        return self.node(node_id).log_tail(lines)

    def metrics_targets(self) -> dict[int, str]:
        """Each node's JMX exporter address (`host:port`), when the agent is attached."""
        return {i: f"127.0.0.1:{n.ports.metrics}" for i, n in self.nodes.items() if n.ports.metrics}

    def notes(self) -> list[str]:
        """Why a volume is not a tmpfs of its own, for each that is not."""
        return [f"node {i}: {n.volume.note}" for i, n in self.nodes.items() if n.volume.note]

    # -- life cycle ------------------------------------------------------------------------------

    def prepare(self) -> None:
        """Create the volumes (`start` does it when not done): a caller can then set limits from
        their measured sizes before the brokers are configured."""
        for node in self.nodes.values():
            if not node.volume.mounted and not node.volume.note:
                node.volume = Volume.create(node.volume.path, node.volume.size_bytes)

    def start(self) -> KafkaCluster:
        self.prepare()
        retries = self.port_retries
        while True:
            self._write_configs()
            if not self.cluster_id:
                self.cluster_id = _cluster_id()
                self._format()
            for node in self.nodes.values():
                node.start()
            try:
                self._wait_started(self.nodes.values())
                return self
            except NodeFailed as failure:
                for node in self.nodes.values():
                    node.kill()
                if retries > 0 and "Address already in use" in str(failure):
                    retries -= 1  # a port taken between its pick and the bind: pick all again
                    metrics = any(n.ports.metrics for n in self.nodes.values())
                    for node_id, ports in self._pick_ports(len(self.nodes), metrics).items():
                        self.nodes[node_id].ports = ports
                    continue
                raise

    def _write_configs(self) -> None:
        ports = {i: n.ports for i, n in self.nodes.items()}
        for node_id, node in self.nodes.items():
            extra = dict(self.properties)
            if self.node_properties is not None:
                extra.update(self.node_properties(node, self.bootstrap))
            node.write_config(server_properties(node_id, ports, node.log_dir, node.metadata_dir,
                                                self.quota_window_num, extra))

    def _format(self) -> None:
        running = {node.node_id: node.format(self.cluster_id) for node in self.nodes.values()}
        for node_id, process in running.items():
            try:
                code = process.wait(self.start_timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                code = None
            if code != 0:
                for other in running.values():
                    other.kill()
                raise NodeFailed(f"StorageTool format of node {node_id} failed (exit {code})\n"
                                 + self.nodes[node_id].log_tail())

    def _wait_started(self, nodes: Iterable[Node]) -> None:
        deadline = time.monotonic() + self.start_timeout
        for node in nodes:
            node.wait_started(deadline, self.start_timeout)

    def stop_node(self, node_id: int, timeout: float = 30.0) -> None:
        """A clean shutdown (SIGTERM); killed after `timeout` seconds."""
        self.node(node_id).stop(timeout)

    def kill_node(self, node_id: int) -> None:
        """kill -9."""
        self.node(node_id).kill()

    def restart_node(self, node_id: int) -> None:
        """Start a stopped or killed node again on its data; returns once it serves. (The node runs
        under `setpriv --pdeathsig`, so call this from a thread that outlives it: the main thread.)"""
        node = self.node(node_id)
        node.kill()
        node.start()
        self._wait_started([node])

    def close(self, keep_work: bool = False) -> None:
        """Kill every node (its data is thrown away), unmount the volumes, remove the work dir."""
        for node in self.nodes.values():
            if node.process is not None and node.process.poll() is None:
                node.process.kill()
        for node in self.nodes.values():
            node.kill()
            node.volume.release()
        if not keep_work:
            shutil.rmtree(self.work, ignore_errors=True)

    def __enter__(self) -> KafkaCluster:
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc: object) -> None:
        self.close()


def _cluster_id() -> str:
    """A random cluster id as `StorageTool random-uuid` makes it (a UUID in URL-safe base64), without
    starting a JVM for it."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):  # Kafka's Uuid.randomUuid avoids these: a CLI would read an option
            return text


def _jmx_exporter() -> tuple[Path, Path]:
    from tests.support.java_parts import jar
    from tests.support.kafka.jmx_exporter import AGENT_ARTIFACT, PART, RULES

    return jar(PART, AGENT_ARTIFACT), RULES
