"""The live control loop against a scripted cluster: rounds, fallbacks, the held throttling broker,
enforcement with retries, restarts from the state file, dry run, HTTP endpoints and bad input."""

from __future__ import annotations

import io
import json
import socket
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from quotaplane.cli import main
from quotaplane.core.errors import ConfigError
from quotaplane.live.admin import AdminError, LogDir, QuotaAlteration, QuotaEntity
from quotaplane.live.enforce import DEFAULT_USER, PRODUCE, Enforcer
from quotaplane.live.http import Endpoints
from quotaplane.live.metrics import LiveMetrics, LiveStatus
from quotaplane.live.service import Options, Service, input_schemas, live_policies
from quotaplane.live.sources.kafka import KafkaSource
from quotaplane.live.state import StateFile
from quotaplane.storage.config import StorageRunConfig, parse_storage_config
from quotaplane.storage.engine.decisions import Decision
from quotaplane.storage.live import decision_of

S = "client.quota.callback.static."
CONFIG = {f"{S}storage.volume.source": "cluster", f"{S}storage.check-interval": "1000",
          f"{S}storage.perVolumeLimit.availableBytesBelow.soft": "400",
          f"{S}storage.perVolumeLimit.availableBytesBelow.hard": "100",
          f"{S}fallback.throttle.factor": "0.5", f"{S}produce": "1000",
          f"{S}excluded.principal.name.list": "User:admin"}


class ScriptedCluster:
    """A ClusterAdmin whose brokers, volumes, quotas and faults each test sets."""

    def __init__(self) -> None:
        self.brokers = [1, 2]
        self.available = {1: 1000, 2: 1000}
        self.quotas: dict[QuotaEntity, dict[str, float]] = {("alice", None): {PRODUCE: 800.0}}
        self.fail_cluster = False
        self.fail_alter: set[QuotaEntity] = set()
        self.altered: list[QuotaAlteration] = []

    def active_brokers(self) -> list[int]:
        if self.fail_cluster:
            raise AdminError("DESCRIBE_CLUSTER_ERROR", "no controller")
        return list(self.brokers)

    def log_dirs(self, broker_ids: Sequence[int]) -> list[LogDir]:
        return [LogDir(b, "/data", 1000, self.available[b], None) if b in self.available
                else LogDir(b, "", None, None, "TIMEOUT: no answer") for b in broker_ids]

    def client_quotas(self) -> dict[QuotaEntity, dict[str, float]]:
        return {e: dict(q) for e, q in self.quotas.items() if q}

    def alter_client_quotas(self, alterations: Sequence[QuotaAlteration]) -> dict[QuotaEntity, str | None]:
        out: dict[QuotaEntity, str | None] = {}
        for a in alterations:
            if a.entity in self.fail_alter:
                out[a.entity] = "POLICY_VIOLATION"
                continue
            self.altered.append(a)
            entry = self.quotas.setdefault(a.entity, {})
            if a.value is None:
                entry.pop(a.key, None)
            else:
                entry[a.key] = a.value
            out[a.entity] = None
        return out

    def close(self) -> None:
        return


@pytest.fixture
def config():
    return parse_storage_config(CONFIG)


def service(config, kafka: ScriptedCluster, tmp_path: Path, dry_run: bool = False,
            clock: list[float] | None = None) -> Service:
    now = clock if clock is not None else [1_000.0]
    source = KafkaSource(kafka, "c", config)
    policies = live_policies({"storage": StorageRunConfig(config, None)}, source.inputs)
    svc = Service([source], policies, input_schemas(), LiveStatus("c"), Options(1.0, None, dry_run, "c"),
                  state_file=StateFile(tmp_path / "state.json"), log=io.StringIO(),
                  clock=lambda: now[0])
    svc.enforcer = Enforcer(kafka, svc.state.bases, config.quotas.produce, config.excluded_principals,
                            dry_run)
    return svc


def decision(svc: Service) -> Decision:
    found = decision_of(svc.outcomes)
    assert found is not None
    return found


def test_rounds_throttle_and_restore_through_client_quotas(config, tmp_path: Path) -> None:
    kafka = ScriptedCluster()
    svc = service(config, kafka, tmp_path)
    assert svc.round() and decision(svc).throttle_factor == 1.0
    assert kafka.altered == []  # nothing to change at factor 1
    kafka.available[2] = 250  # half way between soft (400) and hard (100)
    svc.round()
    assert decision(svc).throttle_factor == 0.5
    assert kafka.quotas[("alice", None)] == {PRODUCE: 400.0}
    assert kafka.quotas[DEFAULT_USER] == {PRODUCE: 500.0}
    assert kafka.quotas[("admin", None)][PRODUCE] > 1e18  # excluded: explicitly unlimited
    n = len(kafka.altered)
    svc.round()
    assert len(kafka.altered) == n  # the same factor alters nothing
    kafka.available[2] = 1000
    svc.round()
    assert kafka.client_quotas() == {("alice", None): {PRODUCE: 800.0}}  # restored exactly
    assert json.loads((tmp_path / "state.json").read_text())["rounds"] == 4


def test_failed_collection_gives_the_fallback_and_is_counted(config, tmp_path: Path) -> None:
    kafka = ScriptedCluster()
    svc = service(config, kafka, tmp_path)
    kafka.fail_cluster = True
    svc.round()
    d = decision(svc)
    assert (d.throttle_factor, d.fallback_reason) == (0.5, "DESCRIBE_CLUSTER_ERROR")
    assert svc.policies[0].decider.collection_errors == {"DESCRIBE_CLUSTER_ERROR": 1}
    kafka.fail_cluster = False
    del kafka.available[2]  # broker 2 does not answer DescribeLogDirs
    svc.round()
    assert decision(svc).throttle_factor == 0.5
    assert decision(svc).missing_brokers == (2,)


def test_a_vanishing_throttling_broker_is_held_for_the_validity_duration(config, tmp_path: Path) -> None:
    kafka = ScriptedCluster()
    clock = [1_000.0]
    svc = service(config, kafka, tmp_path, clock=clock)
    kafka.available[2] = 100  # at the hard limit: factor 0
    svc.round()
    assert decision(svc).throttle_factor == 0.0 and decision(svc).throttling_broker_id == 2
    kafka.brokers = [1]  # the full broker restarts and leaves the active set
    del kafka.available[2]
    clock[0] += 60
    svc.round()
    assert decision(svc).throttle_factor == 0.0  # still throttled: its last observation is held
    clock[0] += 5 * 60
    svc.round()
    assert decision(svc).throttle_factor == 1.0  # past the 5 minute hold


def test_a_failed_alteration_is_retried_next_round_never_lost(config, tmp_path: Path) -> None:
    kafka = ScriptedCluster()
    svc = service(config, kafka, tmp_path)
    kafka.available[2] = 250
    kafka.fail_alter = {("alice", None)}
    svc.round()
    assert kafka.quotas[("alice", None)] == {PRODUCE: 800.0}
    assert svc.status.alterations["failed"] == 1
    kafka.fail_alter = set()
    svc.round()
    assert kafka.quotas[("alice", None)] == {PRODUCE: 400.0}


def test_a_restart_from_the_state_file_does_not_compound_the_factor(config, tmp_path: Path) -> None:
    kafka = ScriptedCluster()
    kafka.available[2] = 250
    service(config, kafka, tmp_path).round()
    assert kafka.quotas[("alice", None)] == {PRODUCE: 400.0}
    restarted = service(config, kafka, tmp_path)  # as after a kill -9 between rounds
    restarted.round()
    assert kafka.quotas[("alice", None)] == {PRODUCE: 400.0}  # not 200
    assert restarted.state.rounds == 2
    kafka.available[2] = 1000
    restarted.round()
    assert kafka.quotas[("alice", None)] == {PRODUCE: 800.0}


def test_dry_run_alters_nothing_and_exports_the_intent(config, tmp_path: Path) -> None:
    kafka = ScriptedCluster()
    svc = service(config, kafka, tmp_path, dry_run=True)
    kafka.available[2] = 250
    svc.round()
    assert kafka.altered == [] and svc.status.alterations["dry_run"] == 3
    assert svc.status.targets[("alice", None)] == 400.0


def test_endpoints_serve_metrics_health_and_the_decision(config, tmp_path: Path) -> None:
    kafka = ScriptedCluster()
    kafka.available[2] = 250
    svc = service(config, kafka, tmp_path, clock=[time.time()])
    registry = CollectorRegistry()
    registry.register(LiveMetrics(svc.status, [p.decider for p in svc.policies]))
    http = Endpoints("127.0.0.1", 0, registry, svc.status, 1.0, svc.lock, {"/decision": None})
    http.start()
    try:
        base = f"http://127.0.0.1:{http.port}"
        with pytest.raises(urllib.request.HTTPError):
            urllib.request.urlopen(base + "/nope", timeout=5)
        svc.round()
        metrics = urllib.request.urlopen(base + "/metrics", timeout=5).read().decode()
        assert 'quotaplane_storage_throttle_factor{cluster="c",config="live"' in metrics
        assert 'quotaplane_client_effective_produce_quota_bytes_per_second{client_id="",user="alice"} 400.0' \
            in metrics
        assert 'quotaplane_client_quota_alterations_total{result="applied"} 3.0' in metrics
        assert urllib.request.urlopen(base + "/healthz", timeout=5).status == 200
        decision = json.loads(urllib.request.urlopen(base + "/decision", timeout=5).read())
        assert decision["throttle_factor"] == 0.5
    finally:
        http.close()


def test_a_port_in_use_is_an_error_naming_it(config) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=f"--metrics-port=127.0.0.1:{port}: cannot listen"):
            Endpoints("127.0.0.1", port, CollectorRegistry(), LiveStatus("c"), 1.0, __import__(
                "threading").Lock())


@pytest.mark.parametrize(("extra", "message"), [
    (["--state", "/nonexistent-dir/state.json"], "--state=/nonexistent-dir/state.json: cannot be written"),
    (["--speed", "0"], "--speed=0: must be max or a number from 0.000001 to 1000000000"),
    (["--rounds", "0"], "--rounds=0: must be at least 1"),
])
def test_bad_options_exit_2_with_one_line(tmp_path: Path, capsys, extra: list[str], message: str) -> None:
    config = tmp_path / "storage.properties"
    config.write_text("\n".join(f"{k}={v}" for k, v in CONFIG.items()) + "\n")
    telemetry = tmp_path / "t"
    (telemetry / "volumes").mkdir(parents=True)
    row = {"ts": 1, "cluster": "c", "broker_id": 1, "log_dir": "/d", "total_bytes": 10, "available_bytes": 5}
    (telemetry / "volumes" / "a.jsonl").write_text(json.dumps(row) + "\n")
    code = main(["serve", "--replay", str(telemetry), "--config", str(config), "--metrics-port", "0", *extra])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err


def test_the_local_source_is_refused(tmp_path: Path, capsys) -> None:
    config = tmp_path / "storage.properties"
    config.write_text(f"{S}storage.volume.source=local\n{S}storage.hard=10\n")
    assert main(["serve", "--replay", str(tmp_path), "--config", str(config)]) == 2
    assert "the live service observes the whole cluster" in capsys.readouterr().err
