"""The live forecast: `quotaplane serve` collects partition sizes (through kafka-python from the
Kafka-protocol test broker), lands them, keeps a bounded window and exports the reference engine's
forecast on /forecast and /metrics; a replay's forecast is the reference forecast over its rows."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

import quotaplane.live.service as live_service
from quotaplane.cli import main
from quotaplane.core.telemetry_files import read_input
from quotaplane.forecast.config import ForecastSettings
from quotaplane.forecast.engine.replicas import ReplicaPoint
from quotaplane.forecast.engine.volumes import VolumeForecast, VolumePoint, forecast_volumes
from quotaplane.forecast.live import ForecastDecider, ForecastWindow
from quotaplane.forecast.metrics import ForecastMetrics
from quotaplane.forecast.records import PARTITION_SIZES
from quotaplane.live.http import Endpoints
from quotaplane.live.metrics import LiveMetrics
from quotaplane.live.service import Service
from quotaplane.storage.config import load_storage_config
from quotaplane.storage.records import VOLUMES
from tests.support.kafka_broker import GIB, FakeLogDir, FakePartition, running_cluster

S = "client.quota.callback.static."
T0 = 1_700_000_000_000
STEP = 10 * 60_000  # a round every 10 minutes
SEGMENT = 50_000


def telemetry(root: Path, rounds: int = 36) -> tuple[list[VolumePoint], list[ReplicaPoint]]:
    """Two brokers, one log dir each: `grow` partition 0 fills (its leader on broker 1, a lagging
    follower marked is_leader=false on broker 2), `saw` partition 0 on broker 1 is at its retention
    limit (segment-sized drops). Written as JSON Lines; returns the same rows as the engine's points."""
    volumes, replicas = [], []
    for i in range(rounds):
        ts = T0 + i * STEP
        grow = 100_000 + 4_000 * i
        saw = 300_000 + 9_000 * (i % 6) - (SEGMENT if i % 6 == 5 else 0) + 500 * (i // 6)
        follower = max(0, grow - 7_000 + (1_000 if i % 3 else 0))
        replicas += [ReplicaPoint(ts, "c", 1, "/d", "grow", 0, grow, True),
                     ReplicaPoint(ts, "c", 1, "/d", "saw", 0, saw, None),
                     ReplicaPoint(ts, "c", 2, "/d", "grow", 0, follower, False)]
        volumes += [VolumePoint(ts, "c", 1, "/d", 2_000_000, 2_000_000 - grow - saw - 50_000),
                    VolumePoint(ts, "c", 2, "/d", 2_000_000, 2_000_000 - follower - 80_000)]
    (root / "volumes").mkdir(parents=True)
    (root / "partition_sizes").mkdir()
    volume_rows = [{"ts": v.ts_ms, "cluster": v.cluster, "broker_id": v.broker_id, "log_dir": v.log_dir,
                    "total_bytes": v.total_bytes, "available_bytes": v.available_bytes,
                    "poll_id": (v.ts_ms - T0) // STEP} for v in volumes]
    replica_rows = [{"ts": r.ts_ms, "cluster": r.cluster, "broker_id": r.broker_id, "log_dir": r.log_dir,
                     "topic": r.topic, "partition": r.partition, "size_bytes": r.size_bytes,
                     **({} if r.is_leader is None else {"is_leader": r.is_leader})} for r in replicas]
    for kind, rows in (("volumes", volume_rows), ("partition_sizes", replica_rows)):
        (root / kind / "part-0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return volumes, replicas


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "storage.properties"
    path.write_text(f"{S}storage.volume.source=cluster\n{S}storage.check-interval=100\n"
                    f"{S}storage.perVolumeLimit.availableBytesBelow.soft=1500000\n"
                    f"{S}storage.perVolumeLimit.availableBytesBelow.hard=1000000\n")
    return path


@pytest.fixture
def services(monkeypatch: pytest.MonkeyPatch) -> list[Service]:
    """The `Service` of every `quotaplane serve` run in the test (read after it returns)."""
    made: list[Service] = []

    class Recorded(Service):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)
    monkeypatch.setattr(live_service, "Service", Recorded)
    return made


def forecasts(svc: Service) -> list[VolumeForecast]:
    decider = next(p.decider for p in svc.policies if p.name == "forecast")
    assert isinstance(decider, ForecastDecider)
    return decider.forecasts


def answer(svc: Service, path: str) -> bytes:
    registry = CollectorRegistry()
    registry.register(LiveMetrics(svc.status, [p.decider for p in svc.policies]))
    http = Endpoints("127.0.0.1", 0, registry, svc.status, 1.0, threading.Lock(), {"/forecast": []})
    try:
        code, _, body = http.answer(path)
    finally:
        http.close()
    assert code == 200
    return body


def assert_exports(svc: Service, expected: list) -> None:
    assert json.loads(answer(svc, "/forecast")) == json.loads(json.dumps([f.as_dict() for f in expected]))
    registry = CollectorRegistry()
    registry.register(ForecastMetrics(expected, [], config="live"))
    metrics = answer(svc, "/metrics").decode().splitlines()
    reference = [line for line in generate_latest(registry).decode().splitlines() if not line.startswith("#")]
    assert len(reference) > 10 and set(reference) <= set(metrics)


def test_a_replay_forecasts_like_the_reference_engine(tmp_path: Path, config_file: Path,
                                                      services: list[Service]) -> None:
    volumes, replicas = telemetry(tmp_path / "telemetry")
    common = ["serve", "--replay", str(tmp_path / "telemetry"), "--config", str(config_file),
              "--metrics-port", "0", "--forecast-window", "3h", "--forecast-horizon", "PT240H",
              "--state", str(tmp_path / "s.json")]
    assert main([*common, "--rounds", "20"]) == 0  # then restarted: it resumes with the window it had
    assert main(common) == 0
    settings = ForecastSettings(3 * 3_600_000, 240 * 3_600_000)
    config = load_storage_config(config_file)
    for svc, last in ((services[0], 19), (services[1], 35)):
        at = T0 + last * STEP
        expected = forecast_volumes([v for v in volumes if v.ts_ms <= at],
                                    [r for r in replicas if r.ts_ms <= at], config, settings)
        assert_exports(svc, expected)
    # the rows took the paths they were written for: partitions, drops, the follower with its leader
    assert forecasts(services[0]) != forecasts(services[1])
    one, two = expected
    assert one.method == two.method == "partitions" and one.at_ms == T0 + 35 * STEP
    assert one.seconds_to_soft is not None and one.seconds_to_hard is not None
    assert two.growth_bytes_per_second == pytest.approx(4_000 * 1000 / STEP)  # the leader's, not its own
    assert {c["topic"] for c in one.top_contributors} == {"grow", "saw"}


def test_the_window_is_bounded(config_file: Path) -> None:
    settings = ForecastSettings(3_600_000, 86_400_000, lookback_ms=2 * 3_600_000)
    window = ForecastWindow(load_storage_config(config_file), settings)
    for i in range(100):
        ts = T0 + i * STEP
        window.add([VolumePoint(ts, "c", 1, "/d", 1000, 900 - i)],
                   [ReplicaPoint(ts, "c", 1, "/d", "t", 0, i)])
    # volumes: one hour of 10-minute rounds, (at - 1h, at]; replica sizes: the two-hour lookback
    assert len(window) == 6 + 12
    assert window.forecast() == forecast_volumes(
        [VolumePoint(T0 + i * STEP, "c", 1, "/d", 1000, 900 - i) for i in range(100)],
        [ReplicaPoint(T0 + i * STEP, "c", 1, "/d", "t", 0, i) for i in range(100)],
        window.config, window.settings)


def serve(config: Path, bootstrap: str, tmp_path: Path, rounds: int = 1) -> int:
    return main(["serve", "--config", str(config), "--bootstrap-servers", bootstrap, "--rounds", str(rounds),
                 "--interval", "0.05", "--metrics-port", "0", "--landing", str(tmp_path / "landing"),
                 "--state", str(tmp_path / "state.json"), "--cluster", "k"])


def test_the_service_lands_partition_sizes_and_drops_a_bad_replica(
        config_file: Path, tmp_path: Path, capsys, services: list[Service]) -> None:
    with running_cluster((1, 2)) as kafka:
        with kafka.lock:
            kafka.broker(1).log_dirs = [FakeLogDir("/a", 10 * GIB, 5 * GIB, partitions=[
                FakePartition("orders", 0, 4096), FakePartition("orders", 1, -5),  # a broken size
                FakePartition("clicks", 3, 1 << 40)])]
            kafka.broker(2).log_dirs = [FakeLogDir("/b", 10 * GIB, 6 * GIB, partitions=[
                FakePartition("orders", 0, 4000), FakePartition("orders", 0, 100, future=True)])]
        assert serve(config_file, kafka.bootstrap_servers, tmp_path, rounds=2) == 0
        with kafka.lock:
            kafka.broker(1).log_dirs[0].partitions[0].size_bytes = 8192
        # a restart: its window is warmed from the landing
        assert serve(config_file, kafka.bootstrap_servers, tmp_path) == 0
        assert kafka.errors == []
    lines = [json.loads(x) for x in capsys.readouterr().err.splitlines() if x.startswith("{")]
    assert len(lines) == 3 and all(line["fallback_reason"] is None for line in lines)
    rule = "size_bytes must not be negative"
    assert [line.get("rejected") for line in lines] == [{f"partition_sizes: {rule}": 1}] * 3
    assert f'quotaplane_live_rejected_rows_total{{input="partition_sizes",reason="{rule}"}} 2.0' \
        in answer(services[0], "/metrics").decode()
    landed = sorted((tmp_path / "landing" / "partition_sizes").glob("round-*.jsonl"))
    assert [f.name for f in landed] == [f"round-{n:010d}.jsonl" for n in (1, 2, 3)]
    fields = [f.name for f in PARTITION_SIZES.fields]
    for f in landed:
        assert all(list(json.loads(line)) == fields for line in f.read_text().splitlines())
    rows = list(read_input(tmp_path / "landing" / "partition_sizes", PARTITION_SIZES))
    ts = sorted({r["ts"] for r in rows})
    assert len(ts) == 3
    expected = [{"ts": t, "cluster": "k", "broker_id": b, "log_dir": d, "topic": topic, "partition": p,
                 "size_bytes": size, "is_leader": None}
                for n, t in enumerate(ts)
                for b, d, topic, p, size in ((1, "/a", "clicks", 3, 1 << 40),
                                             (1, "/a", "orders", 0, 8192 if n == 2 else 4096),
                                             (2, "/b", "orders", 0, 4000))]
    assert rows == expected  # the future replica and the negative size are left out
    # the restarted service forecast over the landed rounds too (its window was warmed)
    last = forecasts(services[-1])
    assert [f.method for f in last] == ["partitions", "partitions"]
    assert last[0].at_ms == ts[-1]
    window = ForecastWindow(load_storage_config(config_file), ForecastSettings())
    window.add([], [ReplicaPoint.from_record(r) for r in rows])
    landed = read_input(tmp_path / "landing" / "volumes", VOLUMES)
    window.add([VolumePoint.from_record(r) for r in landed], [])
    assert last == window.forecast()


def test_bad_durations_are_refused(config_file: Path, tmp_path: Path, capsys) -> None:
    volumes_dir = tmp_path / "t"
    telemetry(volumes_dir, rounds=2)
    code = main(["serve", "--replay", str(volumes_dir), "--config", str(config_file), "--metrics-port", "0",
                 "--forecast-window", "6 hours"])
    assert code == 2
    assert "--forecast-window" in capsys.readouterr().err

