"""`quotaplane serve` end to end through the real Kafka client library, against the loopback
Kafka-protocol test cluster: a volume past its soft limit scales the produce quotas with
AlterClientQuotas, a full broker that restarts keeps the throttle, and the quotas come back exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quotaplane.cli import main
from tests.support.kafka_broker import GIB, running_cluster

S = "client.quota.callback.static."


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "storage.properties"
    path.write_text(f"{S}storage.volume.source=cluster\n{S}storage.check-interval=100\n"
                    f"{S}storage.perVolumeLimit.availableRatioBelow.soft=0.4\n"
                    f"{S}storage.perVolumeLimit.availableRatioBelow.hard=0.1\n{S}produce=1000000\n")
    return path


def serve(config: Path, bootstrap: str, state: Path, *extra: str) -> int:
    return main(["serve", "--config", str(config), "--bootstrap-servers", bootstrap, "--rounds", "1",
                 "--interval", "0.05", "--metrics-port", "0", "--state", str(state), *extra])


def test_serve_scales_and_restores_quotas_on_a_kafka_protocol_cluster(config: Path, tmp_path: Path,
                                                                       capsys) -> None:
    state = tmp_path / "state.json"
    with running_cluster((1, 2)) as kafka:
        kafka.set_quota(("alice", None), "producer_byte_rate", 8000)
        assert serve(config, kafka.bootstrap_servers, state) == 0
        assert kafka.quota_values() == {("alice", None): {"producer_byte_rate": 8000.0}}  # factor 1
        kafka.broker(2).log_dirs[0].usable_bytes = 25 * GIB  # 0.25 of 100 GiB: half way, factor 0.5
        assert serve(config, kafka.bootstrap_servers, state) == 0
        assert kafka.quota_values() == {("alice", None): {"producer_byte_rate": 4000.0},
                                        ("<default>", None): {"producer_byte_rate": 500000.0}}
        assert serve(config, kafka.bootstrap_servers, state, "--dry-run") == 0  # restarted: no compounding
        assert kafka.quota_values()[("alice", None)] == {"producer_byte_rate": 4000.0}
        kafka.broker(2).log_dirs[0].usable_bytes = 90 * GIB
        assert serve(config, kafka.bootstrap_servers, state) == 0
        assert kafka.quota_values() == {("alice", None): {"producer_byte_rate": 8000.0}}
        assert kafka.errors == []
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    assert [line["throttle_factor"] for line in lines] == [1.0, 0.5, 0.5, 1.0]
    assert json.loads(state.read_text())["rounds"] == 4


def test_a_broker_that_does_not_answer_gives_the_fallback(config: Path, tmp_path: Path, capsys) -> None:
    with running_cluster((1, 2)) as kafka:
        kafka.broker(2).hang = True
        first = f"127.0.0.1:{kafka.broker(1).port}"  # the bootstrap broker answers; broker 2 never does
        assert serve(config, first, tmp_path / "state.json", "--timeout", "1") == 0
    (line,) = [json.loads(x) for x in capsys.readouterr().err.splitlines() if x.startswith("{")]
    assert line["throttle_factor"] == 1.0 and line["fallback_reason"] is not None
