"""The CLI contract: `quotaplane config check` and `quotaplane storage evaluate`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quotaplane.cli import main

S = "client.quota.callback.static."
CLUSTER = (f"{S}storage.volume.source=cluster\n"
           f"{S}storage.perVolumeLimit.availableRatioBelow.soft=0.2\n"
           f"{S}storage.perVolumeLimit.availableBytesBelow.hard=100\n"
           f"{S}fallback.throttle.factor=0.25\n"
           f"{S}produce=1000\n{S}fetch=2000\n"
           f"{S}excluded.principal.name.list=User:canary\n")
VOLUMES = [
    {"broker_id": 1, "log_dir": "/a", "total_bytes": 1000, "available_bytes": 900},
    {"broker_id": 2, "log_dir": "/a", "total_bytes": 1000, "available_bytes": 150},
    {"broker_id": 2, "log_dir": "/b", "total_bytes": 1000, "available_bytes": 500},
]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    cluster = tmp_path / "cluster.properties"
    cluster.write_text(CLUSTER)
    local = tmp_path / "local.properties"
    local.write_text(f"{S}storage.soft=500\n{S}storage.hard=1000\n{S}produce=1000\n")
    strimzi = tmp_path / "strimzi.properties"
    strimzi.write_text(f"quotaplane.config.dialect=strimzi\n{S}kafka.admin.bootstrap.servers=k:9092\n"
                       f"{S}storage.per.volume.limit.min.available.ratio=0.2\n")
    vols = tmp_path / "volumes.jsonl"
    vols.write_text("\n".join(json.dumps(v) for v in VOLUMES) + "\n\n")
    return {"cluster": cluster, "local": local, "strimzi": strimzi, "volumes": vols}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def evaluate(capsys: pytest.CaptureFixture[str], config: Path, volumes: Path, *extra: str) -> dict:
    code, out, err = run(capsys, "storage", "evaluate", "--config", str(config), "--volumes", str(volumes),
                         *extra)
    assert code == 0, err
    return json.loads(out)


def test_config_check_prints_a_normalised_summary(files: dict[str, Path], capsys) -> None:
    code, out, err = run(capsys, "config", "check", str(files["cluster"]))
    assert code == 0 and err == ""
    assert "dialect: spec" in out and "source: cluster" in out
    assert "soft limit: availableRatio <= 0.2 per volume" in out
    assert "hard limit: availableBytes <= 100 per volume" in out
    assert "fallback throttle factor: 0.25" in out


def test_config_check_json_and_warnings_on_stderr(files: dict[str, Path], capsys) -> None:
    code, out, err = run(capsys, "config", "check", "--json", str(files["local"]))
    assert code == 0 and json.loads(out)["source"] == "local"
    assert err.startswith("warning: ") and "deprecated" in err


def test_config_check_reports_every_error_one_per_line_and_exits_2(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.properties"
    bad.write_text(f"{S}storage.volume.source=cluster\n{S}fallback.throttle.factor=2\n{S}storage.hard=1\n")
    code, out, err = run(capsys, "config", "check", str(bad))
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert code == 2 and out == "" and len(lines) == 3
    assert lines[0] == f"error: {S}fallback.throttle.factor=2: must be between 0.0 and 1.0 inclusive"


def test_config_check_of_a_missing_file_exits_2(tmp_path: Path, capsys) -> None:
    code, _, err = run(capsys, "config", "check", str(tmp_path / "nope.properties"))
    assert code == 2 and "cannot read the configuration file" in err


def test_evaluate_cluster_source(files: dict[str, Path], capsys) -> None:
    out = evaluate(capsys, files["cluster"], files["volumes"])
    assert out["throttle_factor"] == 0.5
    assert out["throttling_volume"] == {"broker_id": 2, "log_dir": "/a"}
    assert out["fallback_reason"] is None
    assert out["effective_limits"] == {"produce": 500.0, "fetch": 2000.0, "request": None}
    assert out["active_brokers"] == 2 and out["active_log_dirs"] == 3
    assert out["volumes"][0]["factor"] == 0.5 and out["volumes"][0]["soft_threshold_bytes"] == 200.0


def test_evaluate_missing_active_broker_falls_back(files: dict[str, Path], capsys) -> None:
    out = evaluate(capsys, files["cluster"], files["volumes"], "--active-brokers", "1,2,3")
    assert (out["throttle_factor"], out["fallback_reason"], out["throttling_volume"]) == \
        (0.25, "missing_broker_data", None)
    assert out["missing_brokers"] == [3] and out["effective_limits"]["produce"] == 250.0


def test_evaluate_collection_error(files: dict[str, Path], capsys) -> None:
    out = evaluate(capsys, files["cluster"], files["volumes"], "--collection-error", "DESCRIBE_LOG_DIR_ERROR")
    assert (out["throttle_factor"], out["fallback_reason"]) == (0.25, "DESCRIBE_LOG_DIR_ERROR")


def test_evaluate_excluded_principal_is_unlimited(files: dict[str, Path], capsys) -> None:
    out = evaluate(capsys, files["cluster"], files["volumes"], "--principal", "User:canary")
    assert out["effective_limits"] == {"produce": None, "fetch": None, "request": None}
    assert out["principal_excluded"] is True


def test_evaluate_local_source_needs_and_uses_the_observing_broker(files: dict[str, Path], capsys) -> None:
    code, _, err = run(capsys, "storage", "evaluate", "--config", str(files["local"]), "--volumes",
                       str(files["volumes"]))
    assert code == 2 and "--broker" in err and "required with the local volume source" in err
    out = evaluate(capsys, files["local"], files["volumes"], "--broker", "2")
    assert out["used_bytes"] == 1350 and out["throttle_factor"] == 0.0
    assert out["throttling_volume"] == {"broker_id": 2, "log_dir": None}
    assert out["observing_broker_id"] == 2 and out["effective_limits"]["produce"] == 1.0
    out = evaluate(capsys, files["local"], files["volumes"], "--broker", "1")
    assert out["throttle_factor"] == 1.0 and out["throttling_volume"] is None


def test_evaluate_strimzi_dialect_is_a_circuit_breaker(files: dict[str, Path], capsys) -> None:
    out = evaluate(capsys, files["strimzi"], files["volumes"])
    assert out["throttle_factor"] == 0.0 and out["throttling_volume"] == {"broker_id": 2, "log_dir": "/a"}
    out = evaluate(capsys, files["strimzi"], files["volumes"], "--collection-error", "EXCEPTION")
    assert out["throttle_factor"] == 1.0 and out["fallback_reason"] is None  # still valid at start


def test_evaluate_writes_metrics(files: dict[str, Path], tmp_path: Path, capsys) -> None:
    prom = tmp_path / "m.prom"
    evaluate(capsys, files["cluster"], files["volumes"], "--active-brokers", "1,2,3", "--metrics", str(prom))
    text = prom.read_text()
    assert 'quotaplane_storage_throttle_factor{cluster="",config="main",observing_broker_id="",' \
           'source="cluster"} 0.25' in text
    assert 'reason="missing_broker_data"' in text and "quotaplane_storage_effective_produce_limit" in text


@pytest.mark.parametrize(("line", "message"), [
    ('{"broker_id": 1, "log_dir": "/a", "total_bytes": 10, "available_bytes": 11}',
     "field 'available_bytes'=11: available_bytes must not exceed total_bytes"),
    ('{"broker_id": 1, "log_dir": "/a", "total_bytes": -1, "available_bytes": 0}',
     "field 'total_bytes'=-1: total_bytes must be positive"),
    ('{"broker_id": "x", "log_dir": "/a", "total_bytes": 1, "available_bytes": 0}',
     "field 'broker_id'='x': must be a whole number"),
    ('{"broker_id": 1, "total_bytes": 1, "available_bytes": 0}',
     "field 'log_dir'=None: missing required field"),
    ("[1, 2]", "not a JSON object"),
    ("{nope", "unparsable record"),
    ('{"broker_id": 2, "log_dir": "/a", "total_bytes": 1, "available_bytes": 0}',
     "given twice (first at line 2)"),
])
def test_bad_volume_lines_exit_2_naming_the_line_and_field(files: dict[str, Path], tmp_path: Path, capsys,
                                                           line: str, message: str) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(json.dumps(v) for v in VOLUMES[:2]) + "\n" + line + "\n")
    code, out, err = run(capsys, "storage", "evaluate", "--config", str(files["cluster"]),
                         "--volumes", str(bad))
    assert code == 2 and out == ""
    assert err.startswith(f"error: {bad}:3: ") and message in err


def test_bad_active_broker_list_exits_2(files: dict[str, Path], capsys) -> None:
    code, _, err = run(capsys, "storage", "evaluate", "--config", str(files["cluster"]), "--volumes",
                       str(files["volumes"]), "--active-brokers", "1,two")
    assert code == 2 and "--active-brokers" in err and "1,two" in err
