"""`make kafka` / `python -m tests.support.kafka`: the tests' Kafka cluster for people (docs/real-kafka.md).

Starts N combined KRaft nodes (default 3) on loopback, each log dir on a tmpfs of its own, prints
the bootstrap servers, each node's log dir, volume and log, and a storage configuration for
`quotaplane serve` sized to the volumes; runs until Ctrl-C (or SIGTERM), then stops the nodes,
unmounts the volumes and removes its files.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path
from typing import Any

from tests.support.kafka.cluster import MIB, KafkaCluster
from tests.support.kafka.node import NodeFailed
from tests.support.kafka.strimzi import plugin_classpath, plugin_node_properties, plugin_properties

S = "client.quota.callback.static."


def storage_config(path: Path, volume_bytes: int, interval_s: int) -> Path:
    """A quotaplane storage configuration for this cluster: slow producers once a volume has half of
    its bytes left or less, stop them at a quarter."""
    path.write_text(
        "# quotaplane serve against the `make kafka` cluster (tests/support/kafka/__main__.py)\n"
        f"{S}storage.volume.source=cluster\n"
        f"{S}storage.check-interval={interval_s * 1000}\n"
        f"{S}storage.perVolumeLimit.availableBytesBelow.soft={volume_bytes // 2}\n"
        f"{S}storage.perVolumeLimit.availableBytesBelow.hard={volume_bytes // 4}\n"
        "# the produce quota the factor scales when a client has none of its own: 1 MiB/s\n"
        f"{S}produce={MIB}\n")
    return path


def describe(cluster: KafkaCluster, config: Path) -> str:
    lines = [f"bootstrap servers: {cluster.bootstrap}"]
    for node_id, node in cluster.nodes.items():
        kind = (f"tmpfs of {node.volume.total_bytes() // MIB} MiB" if node.volume.mounted
                else f"plain directory, {node.volume.free_bytes()} bytes free")
        lines += [f"node {node_id}: {node.address}  log dir {node.log_dir}",
                  f"        volume {node.volume.path} ({kind})",
                  f"        log {node.server_log}", f"        metrics {node.metrics_url}"]
    lines += [f"note: {note}" for note in cluster.notes()]
    broker = min(2, len(cluster.nodes))
    lines += ["", f"quotaplane storage config for it: {config}",
              f"  .venv/bin/quotaplane serve --bootstrap-servers {cluster.bootstrap} --config {config}",
              f"fill broker {broker}:",
              f"  .venv/bin/python -m tests.support.kafka.fill --bootstrap-servers {cluster.bootstrap} "
              f"--broker {broker}",
              "", "Ctrl-C stops the cluster and removes its files."]
    return "\n".join(lines)


def _terminate(*_: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.kafka", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=3, help="combined KRaft nodes (default 3)")
    parser.add_argument("--volume-mib", type=int, default=128, help="each log dir's tmpfs, MiB (default 128)")
    parser.add_argument("--strimzi", action="store_true",
                        help="install the Strimzi quotas plugin (produce 1 MiB/s, limit: a quarter of each "
                             "volume available, checked every 5 s)")
    args = parser.parse_args(argv)
    if args.nodes < 1 or args.volume_mib < 1:
        parser.error("--nodes and --volume-mib must be at least 1")
    volume = args.volume_mib * MIB
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, _terminate)  # also when started in the background, where it is ignored
    options: dict[str, Any] = {}
    if args.strimzi:
        options = {"extra_classpath": plugin_classpath(), "node_properties": plugin_node_properties,
                   "properties": plugin_properties({
                       "produce": str(MIB), "storage.check-interval": "5",
                       "storage.per.volume.limit.min.available.bytes": str(volume // 4)})}
    cluster = KafkaCluster(args.nodes, volume_bytes=volume, jmx_exporter=True, **options)
    try:
        print(f"starting Kafka {cluster.release.version()}: {args.nodes} combined KRaft node(s) "
              f"in {cluster.work}", flush=True)
        started = time.monotonic()
        cluster.start()
        config = storage_config(cluster.work / "storage.properties", volume, 5)
        print(f"up in {time.monotonic() - started:.1f} s\n\n{describe(cluster, config)}", flush=True)
        reported: set[int] = set()
        while True:
            for node_id, node in cluster.nodes.items():
                if not node.alive() and node_id not in reported:
                    reported.add(node_id)
                    print(f"node {node_id} exited:\n{node.log_tail(10)}", flush=True)
            time.sleep(1)
    except KeyboardInterrupt:
        print("\nstopping", flush=True)
        return 0
    except NodeFailed as failure:
        print(f"the cluster did not start: {failure}", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not leave volumes mounted
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        cluster.close()


if __name__ == "__main__":
    sys.exit(main())
