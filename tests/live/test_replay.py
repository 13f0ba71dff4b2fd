"""`quotaplane serve --replay` decides like the batch pipeline, lands what it saw, and stops cleanly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from quotaplane.cli import main
from quotaplane.core.policy import RunConfigs
from quotaplane.core.runner import run_pipeline
from quotaplane.live.sources.replay import read_rounds
from quotaplane.run_command import bundled_example
from quotaplane.storage.config import load_storage_config
from quotaplane.storage.policy import StoragePolicy
from tests.support.differential import assert_rows_equal

TELEMETRY, CONFIGS = bundled_example()


def landed_decisions(landing: Path) -> list[dict]:
    return [json.loads(line) for f in sorted((landing / "storage_decisions").glob("*.jsonl"))
            for line in f.read_text().splitlines()]


def batch_decisions(spark, telemetry: Path, out: Path) -> list[dict]:
    run_pipeline(telemetry, RunConfigs(storage=CONFIGS.storage), out, [StoragePolicy()], stream=None,
                 spark=spark)
    rows = [r.asDict() for r in spark.read.parquet(str(out / "storage_decisions")).collect()]
    for r in rows:
        r.pop("ts")
    return rows


@pytest.mark.spark
def test_replay_decides_like_the_batch_run_and_lands_what_it_saw(spark, tmp_path: Path, capsys) -> None:
    landing = tmp_path / "landing"
    code = main(["serve", "--replay", str(TELEMETRY), "--config", str(CONFIGS.storage), "--metrics-port", "0",
                 "--landing", str(landing), "--state", str(tmp_path / "state.json")])
    assert code == 0
    log = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    replayed = landed_decisions(landing)
    assert len(replayed) == len(log) > 500
    batch = batch_decisions(spark, TELEMETRY, tmp_path / "batch")
    assert_rows_equal(batch, replayed, label="storage_decisions")  # round by round, every column
    # the landing directory holds exactly the rounds the service saw, as the batch run groups them
    config = load_storage_config(CONFIGS.storage)
    assert read_rounds(landing, config) == read_rounds(TELEMETRY, config)


def test_sigterm_finishes_the_round_flushes_the_state_and_exits_0(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "quotaplane.cli", "serve", "--replay", str(TELEMETRY), "--config",
         str(CONFIGS.storage), "--metrics-port", "0", "--speed", "1", "--state", str(state)],
        stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stderr is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the first round is done once its log line is out
        line = proc.stderr.readline()
        if line.startswith("{"):
            break
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    assert json.loads(state.read_text())["rounds"] == 1


def test_kill_9_between_rounds_loses_and_doubles_nothing(tmp_path: Path) -> None:
    from tests.live.test_prometheus import S, telemetry

    telemetry(tmp_path / "telemetry")
    config = tmp_path / "storage.properties"
    config.write_text(f"{S}storage.volume.source=cluster\n{S}storage.perVolumeLimit.availableBytesBelow.soft=400\n"
                      f"{S}storage.perVolumeLimit.availableBytesBelow.hard=100\n")

    def command(landing: Path, state: Path, *extra: str) -> list[str]:
        return [sys.executable, "-m", "quotaplane.cli", "serve", "--replay", str(tmp_path / "telemetry"),
                "--config", str(config), "--metrics-port", "0", "--landing", str(landing), "--state",
                str(state), *extra]

    proc = subprocess.Popen(command(tmp_path / "landing", tmp_path / "state.json", "--speed", "10"),
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    seen = 0
    while seen < 5:
        if proc.stderr.readline().startswith("{"):
            seen += 1
    proc.kill()
    proc.wait(timeout=30)
    subprocess.run(command(tmp_path / "landing", tmp_path / "state.json"), check=True, capture_output=True)
    subprocess.run(command(tmp_path / "whole", tmp_path / "whole.json"), check=True, capture_output=True)
    assert sorted(p.name for p in (tmp_path / "landing" / "storage_decisions").iterdir()) == sorted(
        p.name for p in (tmp_path / "whole" / "storage_decisions").iterdir())
    assert landed_decisions(tmp_path / "landing") == landed_decisions(tmp_path / "whole")
    assert json.loads((tmp_path / "state.json").read_text())["rounds"] == 40
