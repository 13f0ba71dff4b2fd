"""A real Spark standalone cluster (master + workers) or Spark Connect server on loopback.

Started from the installed pyspark distribution (`pyspark/bin/spark-class`), nothing downloaded.
Used by the distributed-run test, by `python -m tests.support.cluster_check`, and by
`python -m tests.support.cluster standalone|connect` (run from the repository root) to try
`quotaplane run --master spark://127.0.0.1:PORT` or `--remote sc://127.0.0.1:PORT` by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

from quotaplane.core.spark.session import LOG4J_CONFIG

HOST = "127.0.0.1"
SPARK_HOME = Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _env(log_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": HOST,
        "SPARK_LOG_DIR": str(log_dir),
        "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
    })
    return env


@dataclass
class LocalCluster:
    """Processes of a loopback Spark cluster; `stop()` ends them all."""

    url: str
    work_dir: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    ui_port: int | None = None

    def stop(self) -> None:
        for proc in reversed(self.processes):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in reversed(self.processes):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        self.processes.clear()

    def __enter__(self) -> LocalCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _spawn(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    out = log.open("wb")
    return subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), *args], stdout=out,
                            stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://{HOST}:{ui_port}/json/", timeout=2) as resp:
            return int(json.load(resp).get("aliveworkers", 0))
    except (OSError, ValueError):
        return 0


def _master_address(master: subprocess.Popen[bytes], log: Path, deadline: float) -> tuple[str, int]:
    """The URL and web UI port the master bound (it logs both once it is up)."""
    while time.monotonic() < deadline and master.poll() is None:
        text = log.read_text(errors="replace") if log.exists() else ""
        url = re.search(r"Starting Spark master at (spark://\S+)", text)
        ui = re.search(r"Bound MasterWebUI to \S+ and started at http://\S+?:(\d+)", text)
        if url and ui:
            return url.group(1), int(ui.group(1))
        time.sleep(0.2)
    raise RuntimeError(f"the Spark master did not start; see {log}")


def start_standalone(workers: int = 2, cores: int = 1, memory: str = "1g",
                     work_dir: Path | None = None, timeout: float = 90.0) -> LocalCluster:
    """Start a master and `workers` workers on loopback; return once all workers registered.

    Every process binds free ports itself (port 0) and the workers are given the address the master
    logged: a port picked here could be taken before the master binds it, and the master would then
    move to the next one while the workers knock at the first."""
    work = work_dir or Path(tempfile.mkdtemp(prefix="quotaplane-standalone-"))
    work.mkdir(parents=True, exist_ok=True)
    env = _env(work / "logs")
    deadline = time.monotonic() + timeout
    cluster = LocalCluster(url="", work_dir=work)
    cluster.processes.append(_spawn(
        ["org.apache.spark.deploy.master.Master", "--host", HOST, "--port", "0", "--webui-port", "0"],
        work / "master.log", env))
    try:
        cluster.url, cluster.ui_port = _master_address(cluster.processes[0], work / "master.log", deadline)
    except RuntimeError:
        cluster.stop()
        raise
    for i in range(workers):
        worker_dir = work / f"worker-{i}"
        worker_dir.mkdir(exist_ok=True)
        cluster.processes.append(_spawn(
            ["org.apache.spark.deploy.worker.Worker", "--host", HOST, "--cores", str(cores),
             "--memory", memory, "--webui-port", "0", "--work-dir", str(worker_dir),
             cluster.url], work / f"worker-{i}.log", env))
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in cluster.processes):
            cluster.stop()
            raise RuntimeError(f"a Spark process exited during start-up; see logs in {work}")
        if _alive_workers(cluster.ui_port) >= workers:
            return cluster
        time.sleep(0.5)
    cluster.stop()
    raise TimeoutError(f"{workers} workers did not register with {cluster.url} in {timeout:.0f}s; "
                       f"see logs in {work}")


def start_connect_server(work_dir: Path | None = None, timeout: float = 90.0,
                         master: str = "local[2]", conf: dict[str, str] | None = None) -> LocalCluster:
    """Start a Spark Connect server on loopback, with `conf` besides its own settings; return once
    it accepts connections."""
    work = work_dir or Path(tempfile.mkdtemp(prefix="quotaplane-connect-"))
    work.mkdir(parents=True, exist_ok=True)
    env = _env(work / "logs")
    port = free_port()
    cluster = LocalCluster(url=f"sc://{HOST}:{port}", work_dir=work)
    cluster.processes.append(_spawn(
        ["org.apache.spark.deploy.SparkSubmit", "--master", master,
         "--driver-java-options", f"-Dlog4j.configurationFile={LOG4J_CONFIG.as_uri()}",
         "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
         "--conf", f"spark.connect.grpc.binding.address={HOST}",
         "--conf", f"spark.connect.grpc.binding.port={port}",
         "--conf", "spark.ui.enabled=false",
         "--conf", "spark.sql.session.timeZone=UTC",
         *(arg for key, value in (conf or {}).items() for arg in ("--conf", f"{key}={value}")),
         "spark-internal"], work / "connect.log", env))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cluster.processes[0].poll() is not None:
            raise RuntimeError(f"the Spark Connect server exited; see {work / 'connect.log'}")
        with socket.socket() as s:
            if s.connect_ex((HOST, port)) == 0:
                return cluster
        time.sleep(0.5)
    cluster.stop()
    raise TimeoutError(f"Spark Connect did not listen on {cluster.url} in {timeout:.0f}s")


def main(argv: list[str] | None = None) -> int:
    """Start a loopback cluster, print its URL, and keep it up until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m tests.support.cluster",
                                     description=__doc__)
    parser.add_argument("kind", choices=["standalone", "connect"])
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    cluster = start_standalone(args.workers) if args.kind == "standalone" else start_connect_server()
    flag = "--master" if args.kind == "standalone" else "--remote"
    print(f"{cluster.url}\n  try: quotaplane run {flag} {cluster.url}\n  logs: {cluster.work_dir}\n"
          "  Ctrl-C stops it.", flush=True)
    try:
        while all(p.poll() is None for p in cluster.processes):
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
