"""`quotaplane simulate` in-process: output, listing, and errors naming the option."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quotaplane.cli import main
from quotaplane.core.policy import find_input
from quotaplane.registry import all_inputs


def test_writes_the_layout_the_pipeline_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["simulate", "--scenario", "fleet", "--out", str(tmp_path), "--seed", "5", "--brokers", "6",
                 "--log-dirs", "3", "--days", "0.05", "--interval-seconds", "20", "--clients", "12",
                 "--topics", "4", "--format", "parquet"])
    assert code == 0
    out = capsys.readouterr().out
    assert "wrote" in out and "rows/s" in out
    for name in (i.name for i in all_inputs()):
        path = find_input(tmp_path, name)
        assert path is not None and Path(path).name == name
        assert all(p.suffix == ".parquet" for p in Path(path).iterdir())
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["scenario"] == "fleet" and manifest["seed"] == 5
    assert manifest["arguments"]["log_dirs"] == 3 and manifest["arguments"]["interval_seconds"] == 20
    assert manifest["rows"]["volumes"] > 0
    assert manifest["rows"]["volumes"] <= 6 * 3 * (0.05 * 86_400 // 20)


def test_kinds_option(tmp_path: Path) -> None:
    assert main(["simulate", "--scenario", "collection-errors", "--out", str(tmp_path), "--days", "0.05",
                 "--kinds", "collection_errors,volumes", "--format", "csv"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["collection_errors", "manifest.json", "volumes"]
    rows = json.loads((tmp_path / "manifest.json").read_text())["rows"]
    assert rows.keys() == {"volumes", "collection_errors"}


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--list"]) == 0
    out = capsys.readouterr().out
    for name in ("replication-fill", "fleet", "collection-errors"):
        assert f"{name}: " in out


@pytest.mark.parametrize(("args", "message"), [
    (["--scenario", "nope"], "--scenario=nope: is not a scenario"),
    (["--scenario", "fleet", "--brokers", "0"], "--brokers=0: must be in 1..10000"),
    (["--scenario", "replication-fill", "--brokers", "2"],
     "--brokers=2: must be in 3..10000 for this scenario"),
    (["--scenario", "fleet", "--days", "0"], "--days=0.0: must be more than 0"),
    (["--scenario", "fleet", "--kinds", "volumes,disks"], "--kinds=disks: is not a telemetry kind"),
    (["--scenario", "fleet", "--requests-per-client-per-minute", "0.5"],
     "--requests-per-client-per-minute=0.5: must be in 1..600"),
    (["--scenario", "fleet", "--start", "yesterday"], "--start=yesterday: must be an ISO-8601 timestamp"),
    (["--scenario", "fleet", "--days", "1", "--window-start-hours", "30"],
     "--window-start-hours=30.0: must start the window before the end"),
    (["--scenario", "fleet", "--chunk-rows", "0"], "--chunk-rows=0: must be at least 1"),
])
def test_errors_name_the_option(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                message: str) -> None:
    assert main(["simulate", "--out", str(tmp_path / "out"), *args]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_every_error_at_once(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["simulate", "--out", str(tmp_path), "--scenario", "fleet", "--brokers", "0", "--log-dirs",
                 "0", "--seed", "-1"]) == 2
    err = capsys.readouterr().err
    assert "--brokers=0" in err and "--log-dirs=0" in err and "--seed=-1" in err


def test_scenario_is_required(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["simulate", "--out", str(tmp_path)]) == 2
    assert "--scenario" in capsys.readouterr().err
