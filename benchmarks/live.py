"""The cost of one `quotaplane serve` round, and how it grows with the fleet (docs/performance.md).

A round is what the service does every check interval against a Kafka cluster: DescribeCluster,
Metadata and DescribeLogDirs v4 of every broker through kafka-python, the rows screened with the
readers' rules, the storage decision, the forecast over the window, DescribeClientQuotas (and
AlterClientQuotas when the factor changes), and, with `--landing`, every row written.

Fleets:
- `fleet-B-R`: B brokers holding R partition replicas in all (one log dir each, R/B replicas per
  broker), served by the project's Kafka-protocol test broker in a child process, so the service's
  CPU and memory are measured alone. It answers DescribeLogDirs at that size; it cannot be a real
  cluster of 1,000 brokers on 2 cores.
- `real`: the project's 3-broker Kafka cluster (tests/support/kafka), when `--real` is given.

Per fleet: the first round (it connects and fetches metadata) and the median, min and max of the
next rounds' wall time; their CPU time (user + system of the service's process: its own thread and
kafka-python's IO thread); the service's peak resident memory; the rows a round observes. The goal
(issue: a round for 1,000 brokers and 100,000 replicas within 5 s, the default check interval
being 60 s; memory growing no faster than the replicas) is checked in the printed table.

`python -m benchmarks.live [--fleets 10:1000,100:10000,1000:100000] [--rounds 5] [--landing]
[--real]` writes `benchmarks/results/live.json`.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar

from benchmarks.machine import load_average

RESULTS = Path(__file__).parent / "results" / "live.json"
GOAL_SECONDS = 5.0
DESCRIBE_LOG_DIRS = 35  # the API key
S = "client.quota.callback.static."


def _serve_fleet(brokers: int, replicas: int, ready: Any, stop: Any) -> None:
    """Child process: a test cluster of `brokers` with `replicas` partition replicas in all, whose
    DescribeLogDirs answers are encoded once per broker (the fake encodes in Python, a broker in
    microseconds: re-encoding each round would time the fake, not the service)."""
    from tests.support.kafka_broker import GIB, FakeLogDir, FakePartition, KafkaTestCluster

    class CachedAnswers(KafkaTestCluster):
        cache: ClassVar[dict[tuple[int, int], bytes]] = {}

        def _handle(self, conn: Any, frame: bytes) -> bytes | None:
            api_key, version, correlation_id = struct.unpack(">hhi", frame[:8])
            if api_key != DESCRIBE_LOG_DIRS:
                return super()._handle(conn, frame)
            key = (conn.broker_id, version)
            if key not in self.cache:
                self.cache[key] = super()._handle(conn, frame) or b""
            reply = self.cache[key]
            return reply[:4] + struct.pack(">i", correlation_id) + reply[8:] if reply else reply

    per = max(1, replicas // brokers)
    cluster = CachedAnswers(range(1, brokers + 1)).start()
    try:
        with cluster.lock:
            for b in range(1, brokers + 1):
                parts = [FakePartition(f"topic-{(b * per + i) // 64}", (b * per + i) % 64, 1_000_000 + i)
                         for i in range(per)]
                cluster.broker(b).log_dirs = [FakeLogDir("/var/lib/kafka/data", 100 * GIB, 60 * GIB,
                                                         partitions=parts)]
        ready.send(cluster.bootstrap_servers)
        stop.recv()
    finally:
        cluster.stop()


def _config(tmp: Path) -> Path:
    path = tmp / "storage.properties"
    path.write_text(f"{S}storage.volume.source=cluster\n{S}storage.check-interval=60\n"
                    f"{S}storage.perVolumeLimit.availableRatioBelow.soft=0.2\n"
                    f"{S}storage.perVolumeLimit.availableRatioBelow.hard=0.1\n{S}produce=10485760\n")
    return path


def measure_rounds(bootstrap: str, rounds: int, landing: bool) -> dict[str, Any]:
    """Rounds of a service against `bootstrap`, measured (this process is the service)."""
    from quotaplane.core.policy import RunConfigs
    from quotaplane.live.enforce import Enforcer
    from quotaplane.live.kafka_admin import KafkaClusterAdmin
    from quotaplane.live.landing import Landing
    from quotaplane.live.metrics import LiveStatus
    from quotaplane.live.service import Options, Service, input_schemas, live_policies
    from quotaplane.live.sources.kafka import KafkaSource
    from quotaplane.registry import POLICIES
    from quotaplane.storage.config import load_storage_config

    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        config_path = _config(tmp)
        config = load_storage_config(config_path)
        loaded = {p.name: p.load_config(RunConfigs(storage=config_path)) for p in POLICIES if p.live}
        admin = KafkaClusterAdmin(bootstrap, {}, 60.0)
        source = KafkaSource(admin, "bench", config)
        log = open(tmp / "log.jsonl", "w")  # noqa: SIM115 (closed below, after the rounds)
        service = Service([source], live_policies(loaded, source.inputs), input_schemas(),
                          LiveStatus("bench"), Options(60.0, None, False, "bench"), log=log,
                          landing=Landing(tmp / "landing") if landing else None)
        service.enforcer = Enforcer(admin, service.state.bases, config.quotas.produce, (), False)
        walls, cpus, rows = [], [], 0
        try:
            for _ in range(rounds):
                before = resource.getrusage(resource.RUSAGE_SELF)
                start = time.perf_counter()
                service.round()
                walls.append(time.perf_counter() - start)
                after = resource.getrusage(resource.RUSAGE_SELF)
                cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            line = json.loads((tmp / "log.jsonl").read_text().splitlines()[-1])
            rows = sum(1 for _ in (tmp / "landing").rglob("*.jsonl")) if landing else 0
        finally:
            log.close()
            source.close()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        later = walls[1:] or walls
        return {"first_round_s": round(walls[0], 4), "round_s": {
                    "median": round(statistics.median(later), 4), "min": round(min(later), 4),
                    "max": round(max(later), 4)},
                "cpu_s": {"median": round(statistics.median(cpus[1:] or cpus), 4)},
                "peak_rss_bytes": peak, "landed_files": rows, "factor": line.get("throttle_factor"),
                "rejected": line.get("rejected")}


def _fleet_child(bootstrap: str, rounds: int, landing: bool, out: Any) -> None:
    out.send(measure_rounds(bootstrap, rounds, landing))


def fleet(brokers: int, replicas: int, rounds: int, landing: bool) -> dict[str, Any]:
    """One fleet: its cluster in one child process, the service measured in another (a fresh
    process each, so peak memory is the fleet's own)."""
    ctx = mp.get_context("spawn")
    ready_r, ready_w = ctx.Pipe(duplex=False)
    stop_r, stop_w = ctx.Pipe(duplex=False)
    cluster = ctx.Process(target=_serve_fleet, args=(brokers, replicas, ready_w, stop_r), daemon=True)
    cluster.start()
    try:
        if not ready_r.poll(600):
            raise SystemExit(f"the test cluster of {brokers} brokers did not start")
        bootstrap = ready_r.recv()
        result_r, result_w = ctx.Pipe(duplex=False)
        service = ctx.Process(target=_fleet_child, args=(bootstrap, rounds, landing, result_w))
        service.start()
        if not result_r.poll(3600):
            raise SystemExit(f"the service did not finish {rounds} rounds against {brokers} brokers")
        result = result_r.recv()
        service.join(60)
    finally:
        stop_w.send(None)
        cluster.join(60)
        if cluster.is_alive():
            cluster.kill()
    return {"fleet": f"fleet-{brokers}-{replicas}", "brokers": brokers, "replicas": replicas, **result}


def real_cluster(rounds: int, landing: bool) -> dict[str, Any]:
    """The project's 3-broker Kafka cluster (started here, stopped after)."""
    from tests.support.kafka.cluster import KafkaCluster

    with KafkaCluster(nodes=3) as cluster:
        ctx = mp.get_context("spawn")
        result_r, result_w = ctx.Pipe(duplex=False)
        service = ctx.Process(target=_fleet_child, args=(cluster.bootstrap, rounds, landing, result_w))
        service.start()
        result = result_r.recv()
        service.join(60)
    return {"fleet": "real", "brokers": 3, "replicas": None, **result}


def table(results: list[dict[str, Any]]) -> str:
    lines = ["| fleet | brokers | replicas | first round s | round s (median, min-max) | CPU s "
             "| peak RSS MiB |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        rs = r["round_s"]
        replicas = r["replicas"] if r["replicas"] is not None else "-"
        lines.append(f"| {r['fleet']} | {r['brokers']} | {replicas} | "
                     f"{r['first_round_s']:.2f} | {rs['median']:.2f} ({rs['min']:.2f}-{rs['max']:.2f}) | "
                     f"{r['cpu_s']['median']:.2f} | {r['peak_rss_bytes'] / 2**20:.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.live", description=__doc__.split("\n")[0])
    parser.add_argument("--fleets", default="10:1000,100:10000,1000:100000",
                        help="BROKERS:REPLICAS,... (default: 10:1000,100:10000,1000:100000)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per fleet (default 5)")
    parser.add_argument("--landing", action="store_true", help="land every round's rows too")
    parser.add_argument("--real", action="store_true", help="also the project's real 3-broker cluster")
    args = parser.parse_args(argv)
    results = []
    if args.real:
        results.append(real_cluster(args.rounds, args.landing))
        print(table(results), file=sys.stderr)
    for item in args.fleets.split(","):
        brokers, replicas = (int(x) for x in item.split(":"))
        results.append(fleet(brokers, replicas, args.rounds, args.landing))
        print(table(results[-1:]), file=sys.stderr, flush=True)
    largest = max((r for r in results if r["replicas"]), key=lambda r: r["replicas"], default=None)
    summary = {}
    if largest is not None:
        summary["goal"] = {"fleet": largest["fleet"], "round_s": largest["round_s"]["median"],
                           "within": largest["round_s"]["median"] <= GOAL_SECONDS, "goal_s": GOAL_SECONDS}
        sized = sorted((r for r in results if r["replicas"]), key=lambda r: r["replicas"])
        if len(sized) >= 2:
            a, b = sized[0], sized[-1]
            summary["growth"] = {"replicas": b["replicas"] / a["replicas"],
                                 "round_s": b["round_s"]["median"] / max(a["round_s"]["median"], 1e-9),
                                 "peak_rss": b["peak_rss_bytes"] / a["peak_rss_bytes"]}
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"benchmark": "live", "load_average": load_average(), "rounds": args.rounds,
                                   "landing": args.landing, "results": results, "summary": summary},
                                  indent=2) + "\n")
    print(table(results))
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
