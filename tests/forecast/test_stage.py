"""The forecast stage of `quotaplane run` writes what `quotaplane forecast` prints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quotaplane import cli
from quotaplane.core.policy import RunConfigs
from quotaplane.core.runner import run_pipeline
from quotaplane.forecast.report import next_hard_limit
from quotaplane.registry import POLICIES
from tests.support.differential import assert_rows_equal


@pytest.mark.spark
def test_run_writes_the_forecast_tables_metrics_and_report(spark, telemetry: Path, tmp_path: Path,
                                                           capsys) -> None:
    config, policies = telemetry.parent / "storage.properties", telemetry.parent / "policies.json"
    out = tmp_path / "out"
    outcome = run_pipeline(telemetry, RunConfigs(storage=config, backlog_policies=policies), out, POLICIES,
                           stream=None, spark=spark)
    assert cli.main(["forecast", "--telemetry", str(telemetry), "--config", str(config),
                     "--backlog-policies", str(policies)]) == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    for kind, table in (("volume", "storage_forecast"), ("backlog", "backlog_forecast")):
        expected = [{k: v for k, v in row.items() if k != "kind"} for row in printed if row["kind"] == kind]
        assert_rows_equal(expected, spark.read.parquet(str(out / table)), label=table)
    summary = outcome.summary["forecast"]
    assert summary["volumes_reaching_hard_limit"] == 1 and summary["backlogs_reaching_quota"] == 1
    assert summary["inputs"][0]["input"].endswith("partition_sizes")
    assert "quotaplane_storage_volume_seconds_to_hard_limit{" in (out / "metrics.prom").read_text()
    assert "What runs out next" in (out / "report.html").read_text()


@pytest.mark.spark
def test_the_volume_forecast_without_the_storage_stage_finds_the_last_time_itself(
        spark, telemetry: Path, tmp_path: Path, capsys) -> None:
    """Run alone, the forecast scans the volumes for their last time (the storage stage otherwise
    hands it over) and forecasts what it forecasts in the whole run."""
    config = telemetry.parent / "storage.properties"
    alone = [p for p in POLICIES if p.name == "forecast"]
    out = tmp_path / "out"
    run_pipeline(telemetry, RunConfigs(storage=config), out, alone, stream=None, spark=spark)
    assert cli.main(["forecast", "--telemetry", str(telemetry), "--config", str(config)]) == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    expected = [{k: v for k, v in row.items() if k != "kind"} for row in printed if row["kind"] == "volume"]
    assert expected
    assert_rows_equal(expected, spark.read.parquet(str(out / "storage_forecast")), label="storage_forecast")


def _volume(broker: int, to_hard: float | None, to_full: float | None = None) -> dict[str, object]:
    return {"cluster": "a", "broker_id": broker, "log_dir": "/d", "seconds_to_hard": to_hard,
            "seconds_to_full": to_full}


def test_the_console_names_the_next_volume_to_reach_its_hard_limit_in_the_reports_units() -> None:
    # ten seconds away is not "0.0 h"; a volume already past its limit does not reach it
    assert next_hard_limit([_volume(1, 10.0), _volume(2, 0.0), _volume(3, 7200.0)]) == (
        "forecast: next to reach its hard limit: broker 1 /d in 10 s")
    assert next_hard_limit([_volume(1, 499_680.0)]) == (
        "forecast: next to reach its hard limit: broker 1 /d in 5.8 d")
    assert next_hard_limit([_volume(1, 0.0), _volume(2, None)]) is None
    assert next_hard_limit([]) is None
