"""A real Prometheus (Debian's `prometheus`, which `make test` installs) scrapes
`quotaplane serve --replay`, and its query API returns the throttle factor the service decided."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

from tests.support import tools

S = "client.quota.callback.static."


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return json.loads(answer.read())


def telemetry(root: Path) -> None:
    """Rounds one second apart: factor 1, then 0.5 for the rest (available 250 of 1000, soft 400,
    hard 100)."""
    rows = []
    for i in range(40):
        available = 1000 if i < 3 else 250
        rows.append({"ts": 1_700_000_000_000 + i * 1000, "cluster": "c", "broker_id": 1, "log_dir": "/d",
                     "total_bytes": 1000, "available_bytes": available, "poll_id": i})
    (root / "volumes").mkdir(parents=True)
    (root / "volumes" / "part-0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_prometheus_scrapes_the_service_and_returns_its_factor(tmp_path: Path) -> None:
    telemetry(tmp_path / "telemetry")
    config = tmp_path / "storage.properties"
    config.write_text(f"{S}storage.volume.source=cluster\n{S}storage.perVolumeLimit.availableBytesBelow.soft=400\n"
                      f"{S}storage.perVolumeLimit.availableBytesBelow.hard=100\n")
    service_port, prom_port = free_port(), free_port()
    (tmp_path / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        f"scrape_configs:\n  - job_name: quotaplane\n    static_configs:\n"
        f"      - targets: ['127.0.0.1:{service_port}']\n")
    prometheus = subprocess.Popen(
        [tools.prometheus(), f"--config.file={tmp_path / 'prometheus.yml'}",
         f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{prom_port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    service = subprocess.Popen(
        [sys.executable, "-m", "quotaplane.cli", "serve", "--replay", str(tmp_path / "telemetry"),
         "--config", str(config), "--speed", "1", "--metrics-port", str(service_port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    api = f"http://127.0.0.1:{prom_port}/api/v1/query?query="
    query = urllib.parse.quote('quotaplane_storage_throttle_factor{config="live"}')
    try:
        deadline, value = time.monotonic() + 60, None
        while time.monotonic() < deadline and value != 0.5:
            time.sleep(1)
            try:
                result = get(api + query)["data"]["result"]
            except OSError:
                continue
            value = float(result[0]["value"][1]) if result else None
        assert value == 0.5
        decision = get(f"http://127.0.0.1:{service_port}/decision")
        assert decision["throttle_factor"] == 0.5
    finally:
        for proc in (service, prometheus):
            proc.terminate()
            proc.wait(timeout=30)


def test_the_service_metrics_pass_promtool(tmp_path: Path) -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    from quotaplane.live.metrics import LiveMetrics
    from quotaplane.storage.config import parse_storage_config
    from tests.live.test_service import CONFIG, ScriptedCluster, service

    kafka = ScriptedCluster()
    kafka.available[2] = 250
    svc = service(parse_storage_config(CONFIG), kafka, tmp_path)
    kafka.fail_alter = {("alice", None)}
    svc.round()
    kafka.fail_cluster = True
    svc.round()
    registry = CollectorRegistry()
    registry.register(LiveMetrics(svc.status, [p.decider for p in svc.policies]))
    text = generate_latest(registry)
    assert b"quotaplane_storage_collection_errors_total" in text
    check = subprocess.run([tools.promtool(), "check", "metrics"], input=text,
                           capture_output=True, timeout=60)
    assert (check.stdout + check.stderr).decode().strip() == ""
