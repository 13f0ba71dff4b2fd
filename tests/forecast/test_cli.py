"""`quotaplane forecast`, run in-process on a small telemetry directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quotaplane import cli


def run(capsys, *args: str) -> tuple[int, list[dict], str]:
    code = cli.main(["forecast", *args])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err


def test_one_line_per_volume_then_per_backlog_topic(telemetry: Path, capsys) -> None:
    config, policies = telemetry.parent / "storage.properties", telemetry.parent / "policies.json"
    code, rows, _ = run(capsys, "--telemetry", str(telemetry), "--config", str(config),
                        "--backlog-policies", str(policies))
    assert code == 0
    volume, backlog = rows
    assert volume["kind"] == "volume" and volume["method"] == "partitions"
    assert volume["seconds_to_soft"] == 300.0 and volume["seconds_to_hard"] == 550.0
    assert volume["seconds_to_full"] == 800.0
    assert volume["top_contributors"] == [{"topic": "orders", "share": 0.75},
                                          {"topic": "logs", "share": 0.25}]
    assert backlog["kind"] == "backlog" and backlog["seconds_to_quota"] == 100.0
    assert backlog["quota_type"] == "size"


def test_at_a_given_time_with_metrics(telemetry: Path, tmp_path: Path, capsys) -> None:
    metrics = tmp_path / "forecast.prom"
    code, rows, _ = run(capsys, "--telemetry", str(telemetry), "--at", "1970-01-01T00:00:00Z",
                        "--metrics", str(metrics))
    assert code == 0
    [volume] = rows
    assert volume["at_ms"] == 0 and volume["seconds_to_full"] is None  # one point: no trend
    text = metrics.read_text()
    series = 'quotaplane_storage_volume_seconds_to_full{broker_id="1",cluster="c",config="main",log_dir="/d"}'
    assert f"{series} +Inf" in text


@pytest.mark.parametrize(("args", "message"), [
    (["--window", "6 hours"], "--window=6 hours: must be a duration"),
    (["--horizon", "0d"], "--horizon=0d: must be longer than 0 ms"),
    (["--at", "yesterday"], "--at=yesterday"),
])
def test_bad_options_are_named(telemetry: Path, capsys, args, message) -> None:
    code, _, err = run(capsys, "--telemetry", str(telemetry), *args)
    assert code == 2 and message in err and "Traceback" not in err


def test_a_bad_row_names_its_file_line_and_field(telemetry: Path, capsys) -> None:
    part = telemetry / "partition_sizes" / "part-0.jsonl"
    bad = {"ts": 5, "cluster": "c", "broker_id": 1, "log_dir": "/d", "topic": "x", "partition": 0,
           "size_bytes": -1}
    part.write_text(part.read_text() + json.dumps(bad) + "\n")
    code, _, err = run(capsys, "--telemetry", str(telemetry))
    assert code == 2 and "part-0.jsonl:5" in err and "size_bytes" in err and "must not be negative" in err


def test_a_forecast_time_with_nothing_in_its_window_says_so(telemetry: Path, capsys) -> None:
    code, rows, err = run(capsys, "--telemetry", str(telemetry), "--at", "2000-01-01T00:00:00Z")
    assert code == 0 and rows == []
    assert "warning: volumes: nothing observed in the window (1999-12-31T18:00:00.000Z, " \
        "2000-01-01T00:00:00.000Z]; its observations span 1970-01-01T00:00:00.000Z to " \
        "1970-01-01T00:01:40.000Z" in err
