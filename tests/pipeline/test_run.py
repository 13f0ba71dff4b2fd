"""The main job's wiring: stages run in order, and summary, metrics and report are written."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from prometheus_client import Gauge

from quotaplane.errors import InputError
from quotaplane.pipeline import run as run_module
from quotaplane.pipeline.stage import RunConfigs, RunContext, StageResult, find_input
from quotaplane.report.html import Section
from quotaplane.telemetry.readers import ReadCounts

CALLS: list[str] = []


def run_stage(ctx: RunContext) -> StageResult | None:
    """A stand-in stage: runs only when a `volumes` input exists."""
    CALLS.append("fake")
    path = find_input(ctx.telemetry_dir, "volumes")
    if path is None:
        return None
    Gauge("fake_gauge", "a test gauge", registry=ctx.registry).set(0.5)
    ctx.shared["fake"] = "published"  # type: ignore[assignment]
    return StageResult(
        name="fake",
        summary={"answer": 42},
        read_counts=[ReadCounts(path, 10, 8, 2)],
        sections=[Section("Fake policy").text("hello from the fake stage")],
        console=["fake stage ran"],
    )


@pytest.fixture
def fake_stages(monkeypatch: pytest.MonkeyPatch) -> None:
    CALLS.clear()
    monkeypatch.setattr(run_module, "STAGE_MODULES", (__name__,))


def test_run_writes_summary_metrics_and_report(fake_stages: None, tmp_path: Path) -> None:
    telemetry = tmp_path / "telemetry"
    (telemetry / "volumes").mkdir(parents=True)
    (telemetry / "volumes" / "part-0.jsonl").write_text("{}\n")
    out = tmp_path / "out"
    outcome = run_module.run_pipeline(telemetry, RunConfigs(), out, stream=None, spark=object())
    summary = json.loads((out / "summary.json").read_text())
    assert summary["fake"] == {"answer": 42}
    assert summary["rows"] == {"read": 10, "used": 8, "quarantined": 2}
    assert "fake_gauge 0.5" in (out / "metrics.prom").read_text()
    html = (out / "report.html").read_text()
    assert "hello from the fake stage" in html and "Overview" in html
    printed = io.StringIO()
    run_module.print_outcome(outcome, printed)
    assert "read 10 = used 8 + quarantined 2" in printed.getvalue()
    assert "report:   file://" in printed.getvalue()


def test_run_without_any_input_says_what_it_expected(fake_stages: None, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no policy could run: expected telemetry"):
        run_module.run_pipeline(tmp_path, RunConfigs(), tmp_path / "out", stream=None, spark=object())
    assert CALLS == ["fake"]


def test_run_rejects_a_missing_telemetry_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is not a directory"):
        run_module.run_pipeline(tmp_path / "nope", RunConfigs(), tmp_path / "out", stream=None,
                                spark=object())
