"""The live loop never exits because of what it observes or a sink that fails: bad observations are
left out with their reason and the round decides on the rest, a landing directory or state file
that cannot be written is logged once, counted and retried, a damaged state file is refused at
start, and a restarted replay resumes by time.

The cluster is `ScriptedCluster` (an in-memory `ClusterAdmin`): a real broker cannot be made to
report more usable than total bytes, a volume of no capacity or a negative replica size on demand.
"""

from __future__ import annotations

import io
import json
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from quotaplane.cli import main
from quotaplane.live.admin import LogDir, Replica
from quotaplane.live.landing import Landing
from quotaplane.live.service import Service
from tests.live.test_service import CONFIG, ScriptedCluster, decision, service

S = "client.quota.callback.static."


class OddCluster(ScriptedCluster):
    """Broker 2's one log dir reports what the test sets (total, usable, replica size)."""

    def __init__(self) -> None:
        super().__init__()
        self.odd: tuple[int, int] | None = None
        self.replica_size = 10
        self.boom = False

    def active_brokers(self) -> list[int]:
        if self.boom:
            raise RuntimeError("the client library broke")
        return super().active_brokers()

    def log_dirs(self, broker_ids: Sequence[int]) -> list[LogDir]:
        out = []
        for d in super().log_dirs(broker_ids):
            if d.broker_id == 2 and self.odd is not None:
                d = LogDir(2, d.log_dir, self.odd[0], self.odd[1], None)
            out.append(LogDir(d.broker_id, d.log_dir, d.total_bytes, d.usable_bytes, d.error,
                              (Replica("t", 0, self.replica_size, d.broker_id == 1),)))
        return out


@pytest.fixture
def config():
    from quotaplane.storage.config import parse_storage_config

    return parse_storage_config(CONFIG)


def log_lines(svc: Service) -> list[str]:
    assert isinstance(svc.log, io.StringIO)
    return svc.log.getvalue().splitlines()


@pytest.mark.parametrize(("odd", "rule"), [
    ((1000, 2000), "available_bytes must not exceed total_bytes"),
    ((0, 0), "total_bytes must be positive"),
    ((-1, 0), "total_bytes must be positive"),
])
def test_a_bad_volume_is_left_out_and_the_round_decides_on_the_rest(config, tmp_path: Path,
                                                                    odd: tuple[int, int], rule: str) -> None:
    kafka = OddCluster()
    svc = service(config, kafka, tmp_path)
    kafka.odd = odd
    assert svc.round()
    d = decision(svc)
    # broker 2 has no usable volume: the spec's fallback, never a factor of 0 (1 byte/s)
    assert (d.throttle_factor, d.fallback_reason, d.missing_brokers) == (0.5, "missing_broker_data", (2,))
    assert svc.status.rejected == {("volumes", rule): 1}
    line = json.loads(log_lines(svc)[-1])
    assert line["rejected"] == {f"volumes: {rule}": 1}
    kafka.odd = None
    assert svc.round() and decision(svc).throttle_factor == 1.0


def test_a_negative_replica_size_is_left_out_of_the_forecast_rows(config, tmp_path: Path) -> None:
    kafka = OddCluster()
    kafka.replica_size = -5
    svc = service(config, kafka, tmp_path)
    assert svc.round()
    assert svc.status.rejected == {("partition_sizes", "size_bytes must not be negative"): 2}
    assert decision(svc).throttle_factor == 1.0


def test_a_source_failure_it_did_not_foresee_is_a_failed_round_not_an_exit(config, tmp_path: Path) -> None:
    kafka = OddCluster()
    svc = service(config, kafka, tmp_path)
    kafka.boom = True
    assert svc.round()
    d = decision(svc)
    assert (d.throttle_factor, d.collection_error) == (0.5, "NO_OBSERVATION")
    line = json.loads(log_lines(svc)[-1])
    assert line["source_errors"] == ["kafka: SOURCE_ERROR: RuntimeError: the client library broke"]
    assert svc.status.source_errors == {("kafka", "SOURCE_ERROR"): 1}


def test_an_unwritable_landing_is_logged_once_counted_and_retried(config, tmp_path: Path) -> None:
    kafka = ScriptedCluster()
    svc = service(config, kafka, tmp_path)
    svc.landing = Landing(tmp_path / "landing")
    svc.landing.check_writable()
    (tmp_path / "landing" / "volumes").write_text("a file where the service writes a folder\n")
    kafka.available[2] = 250
    for _ in range(3):
        assert svc.round()
    # deciding and enforcing went on
    assert decision(svc).throttle_factor == 0.5 and kafka.altered
    failures = [x for x in log_lines(svc) if "landing failed" in x]
    assert len(failures) == 1 and str(tmp_path / "landing" / "volumes") in failures[0]
    assert svc.status.sink_failures == {"landing": 3}
    (tmp_path / "landing" / "volumes").unlink()
    assert svc.round()
    landed = sorted(p.name for p in (tmp_path / "landing" / "storage_decisions").iterdir())
    assert landed == [f"round-{n:010d}.jsonl" for n in (1, 2, 3, 4)]  # the queued rounds, in order
    assert any("landing works again" in x for x in log_lines(svc))


def test_an_unwritable_state_file_is_logged_once_and_retried(config, tmp_path: Path) -> None:
    kafka = ScriptedCluster()
    svc = service(config, kafka, tmp_path)
    assert svc.round()
    state = tmp_path / "state.json"
    state.unlink()
    state.mkdir()  # the service's rename over it now fails
    for _ in range(2):
        assert svc.round()
    assert svc.status.sink_failures == {"state": 2}
    assert len([x for x in log_lines(svc) if "state failed" in x]) == 1
    state.rmdir()
    assert svc.round()
    assert json.loads(state.read_text())["rounds"] == 4


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A real filesystem of 256 KiB (tmpfs: the tests run as root, as `make test` does)."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(f"mounting a 256 KiB tmpfs failed (the test needs root): {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_under_the_landing_is_survived(config, tmp_path: Path, full_disk: Path) -> None:
    kafka = ScriptedCluster()
    svc = service(config, kafka, tmp_path)
    svc.landing = Landing(full_disk / "landing")
    (full_disk / "ballast").write_bytes(b"\0" * (256 * 1024 - 8192))
    for _ in range(3):
        assert svc.round()
    assert svc.status.sink_failures["landing"] >= 1
    assert any("No space left on device" in x for x in log_lines(svc))
    (full_disk / "ballast").unlink()
    assert svc.round()
    assert len(list((full_disk / "landing" / "storage_decisions").iterdir())) == 4


def _replay_dir(root: Path, rounds: range) -> Path:
    root.mkdir(parents=True)
    rows = [{"ts": 1_000_000 + 60_000 * i, "cluster": "c", "broker_id": b, "log_dir": "/d",
             "total_bytes": 1000, "available_bytes": 900 - 10 * i, "poll_id": i}
            for i in rounds for b in (1, 2)]
    (root / "volumes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def test_a_replay_on_an_existing_state_resumes_after_its_last_round_by_time(tmp_path: Path, capsys) -> None:
    config = tmp_path / "storage.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in CONFIG.items()))
    state = tmp_path / "state.json"

    def replay(telemetry: Path) -> list[dict]:
        assert main(["serve", "--replay", str(telemetry), "--config", str(config), "--metrics-port", "0",
                     "--state", str(state)]) == 0
        return [json.loads(x) for x in capsys.readouterr().err.splitlines() if x.startswith("{")]

    first = replay(_replay_dir(tmp_path / "a", range(10)))
    assert [x["round"] for x in first] == list(range(1, 11))
    # other telemetry, fewer rounds, all of them before the last decided round: nothing is left
    assert replay(_replay_dir(tmp_path / "b", range(4))) == []
    assert json.loads(state.read_text())["rounds"] == 10
    # telemetry that goes on past it: only the rounds after it, numbered on
    later = replay(_replay_dir(tmp_path / "c", range(15)))
    assert [x["ts_ms"] for x in later] == [1_000_000 + 60_000 * i for i in range(10, 15)]
    assert [x["round"] for x in later] == list(range(11, 16))


@pytest.mark.parametrize(("content", "problem"), [
    ('{"version": 2, "rounds": 1}', "version 2 is not 1"),
    ('{"version": 1, "rounds": -3}', "rounds must be a whole number >= 0, not -3"),
    ('{"version": 1, "rounds": "7"}', "rounds must be a whole number >= 0, not '7'"),
    ('{"version": 1, "rounds": 1, "base": {"user=a,client-id=": "fast"}}',
     "base['user=a,client-id='] must be a produce quota >= 0 or null"),
    ('{"version": 1, "rounds": 1, "base": {"alice": 10}}', "base: 'alice' is not an entity"),
    ('{"version": 1, "rounds": 1, "extra": 1}', "unknown key 'extra'"),
    ('{"version": 1, "rounds": 0, "last_decision": {"ts_ms": 5, "cluster": "c"}}',
     "a last_decision with rounds 0"),
    ('[1, 2]', "must be a JSON object, not list"),
    ('{"version": 1, "rou', "is not a state file of quotaplane serve"),
])
def test_a_damaged_state_is_refused_at_start_with_one_line(tmp_path: Path, capsys, content: str,
                                                            problem: str) -> None:
    config = tmp_path / "storage.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in CONFIG.items()))
    state = tmp_path / "state.json"
    state.write_text(content)
    code = main(["serve", "--replay", str(_replay_dir(tmp_path / "t", range(2))), "--config", str(config),
                 "--metrics-port", "0", "--state", str(state)])
    err = capsys.readouterr().err
    assert code == 2 and problem in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert state.read_text() == content  # never used, never overwritten


def test_serve_reads_its_options_from_a_settings_file(tmp_path: Path, capsys) -> None:
    config = tmp_path / "storage.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in CONFIG.items()))
    settings = tmp_path / "serve.properties"
    settings.write_text(f"replay={_replay_dir(tmp_path / 't', range(5))}\nconfig={config}\nmetrics-port=0\n"
                        "rounds=4\ndry-run=true\n")
    assert main(["serve", "--settings", str(settings), "--rounds", "2"]) == 0  # the command line wins
    lines = [json.loads(x) for x in capsys.readouterr().err.splitlines() if x.startswith("{")]
    assert len(lines) == 2 and all(x["dry_run"] for x in lines)
    settings.write_text(f"config={config}\nbootstrap.servers=x:1\n")
    assert main(["serve", "--settings", str(settings)]) == 2
    assert "bootstrap.servers=x:1: is not an option of quotaplane serve" in capsys.readouterr().err
