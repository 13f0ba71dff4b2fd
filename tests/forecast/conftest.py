"""A small telemetry directory with volumes, partition sizes and backlog snapshots."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

P = "client.quota.callback.static."
CONFIG = (f"{P}storage.volume.source=cluster\n"
          f"{P}storage.perVolumeLimit.availableRatioBelow.soft=0.5\n"
          f"{P}storage.perVolumeLimit.availableRatioBelow.hard=0.25\n")
HOLD = {"limitSize": 1000, "policy": "producer_request_hold"}
POLICIES = {"broker": {}, "namespaces": {"t/ns": {"destination_storage": HOLD}}}


def write(path: Path, rows: list[dict]) -> None:
    path.mkdir(parents=True)
    (path / "part-0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture
def telemetry(tmp_path: Path) -> Path:
    root = tmp_path / "telemetry"
    write(root / "volumes", [{"ts": t * 1000, "cluster": "c", "broker_id": 1, "log_dir": "/d",
                              "total_bytes": 1000, "available_bytes": 900 - t} for t in (0, 100)])
    write(root / "partition_sizes", [
        {"ts": t * 1000, "cluster": "c", "broker_id": 1, "log_dir": "/d", "topic": topic, "partition": 0,
         "size_bytes": size, "is_leader": True}
        for t, topic, size in ((0, "orders", 0), (100, "orders", 75), (0, "logs", 0), (100, "logs", 25))])
    write(root / "backlog_snapshots", [
        {"ts_ms": t * 1000, "topic": "persistent://t/ns/a", "subscription": "s", "backlog_size_bytes": size,
         "backlog_entries": 1, "oldest_unacked_publish_ts_ms": 0} for t, size in ((0, 0), (100, 500))])
    (tmp_path / "storage.properties").write_text(CONFIG)
    (tmp_path / "policies.json").write_text(json.dumps(POLICIES))
    return root
