"""The main job, `quotaplane run`: every policy stage over one telemetry directory.

Each stage reads its own inputs, evaluates its policy with Spark and contributes tables, metrics,
a summary and report sections (see `quotaplane.pipeline.stage`). This module wires them: it starts
Spark, runs the stages in order, and writes `summary.json`, `metrics.prom` and `report.html`.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from prometheus_client import CollectorRegistry

from quotaplane import __version__
from quotaplane.errors import InputError
from quotaplane.metrics import exposition
from quotaplane.pipeline.stage import INPUT_NAMES, Progress, RunConfigs, RunContext, StageResult
from quotaplane.report.html import Section, write_report

# Policy stages, in the order they run; each module exposes `run_stage(ctx) -> StageResult | None`
# (see quotaplane.pipeline.stage). Later stages may use what earlier ones put in `ctx.shared`.
STAGE_MODULES: tuple[str, ...] = (
    "quotaplane.pipeline.storage.job",
    "quotaplane.pipeline.backlog.job",
    "quotaplane.pipeline.topics.job",
    "quotaplane.pipeline.clients.job",  # after the storage stage: uses ctx.shared["storage_decisions"]
)

BUNDLED_EXAMPLE = "replication-fill"
# The bundled example's configuration files, by `RunConfigs` field.
EXAMPLE_CONFIG_FILES = {
    "storage": "storage-cluster.properties",
    "storage_compare": "storage-local.properties",
    "client_quotas": "client-quotas.json",
    "topics": "topics.properties",
    "backlog_policies": "backlog-policies.json",
}


def examples_dir() -> Path:
    """The repository's `examples/` directory (the package is installed from the source tree)."""
    return Path(__file__).resolve().parents[3] / "examples"


def bundled_example(name: str = BUNDLED_EXAMPLE) -> tuple[Path, RunConfigs]:
    """The telemetry directory and configs of a bundled example."""
    root = examples_dir() / name
    if not (root / "telemetry").is_dir():
        raise InputError(str(root), "telemetry", None,
                         "the bundled example is missing; pass --telemetry DIR and the config options")
    config_dir = root / "config"
    found = {key: config_dir / file for key, file in EXAMPLE_CONFIG_FILES.items()
             if (config_dir / file).is_file()}
    return root / "telemetry", RunConfigs(**found)


@dataclass
class RunOutcome:
    """What a run produced."""

    out_dir: Path
    report: Path
    summary_path: Path
    metrics_path: Path
    summary: dict[str, object]
    results: list[StageResult] = field(default_factory=list)


def run_pipeline(
    telemetry_dir: Path,
    configs: RunConfigs,
    out_dir: Path,
    master: str | None = None,
    remote: str | None = None,
    stream: TextIO | None = sys.stderr,
    spark: object | None = None,
) -> RunOutcome:
    """Run every stage whose inputs are present; write the outputs under `out_dir`."""
    from quotaplane.pipeline.session import build_session

    if not telemetry_dir.is_dir():
        raise InputError(str(telemetry_dir), "--telemetry", str(telemetry_dir), "is not a directory")
    out_dir.mkdir(parents=True, exist_ok=True)
    progress = Progress(stream)
    started = time.perf_counter()
    started_at = datetime.now(UTC)
    if spark is None:
        where = remote or master or "local[*]"
        with progress.step(f"starting Spark ({where})"):
            spark = build_session(master=master, remote=remote)
    ctx = RunContext(spark=spark, telemetry_dir=telemetry_dir, out_dir=out_dir, configs=configs,
                     registry=CollectorRegistry(), progress=progress)
    results: list[StageResult] = []
    for module_name in STAGE_MODULES:
        module = importlib.import_module(module_name)
        result = module.run_stage(ctx)
        if result is not None:
            results.append(result)
    if not results:
        expected = ", ".join(INPUT_NAMES)
        raise InputError(str(telemetry_dir), "--telemetry", str(telemetry_dir),
                         f"no policy could run: expected telemetry ({expected}) with its configuration")
    elapsed = time.perf_counter() - started
    summary = _summary(telemetry_dir, configs, out_dir, master, remote, started_at, elapsed, results,
                       progress)
    summary_path = out_dir / "summary.json"
    summary_path.write_text(json.dumps(summary, indent=2, default=str) + "\n", encoding="utf-8")
    metrics_path = exposition.write(ctx.registry, out_dir / "metrics.prom")
    with progress.step("writing the report"):
        report = write_report(
            out_dir / "report.html",
            "quotaplane report",
            f"telemetry {telemetry_dir} · generated {started_at:%Y-%m-%d %H:%M UTC} · "
            f"quotaplane {__version__}",
            [_overview_section(summary, results), *[s for r in results for s in r.sections]],
        )
    return RunOutcome(out_dir, report, summary_path, metrics_path, summary, results)


def _summary(telemetry_dir: Path, configs: RunConfigs, out_dir: Path, master: str | None,
             remote: str | None, started_at: datetime, elapsed: float, results: list[StageResult],
             progress: Progress) -> dict[str, object]:
    inputs = [c.as_dict() for r in results for c in r.read_counts]
    return {
        "run": {
            "quotaplane_version": __version__,
            "started_at": started_at.isoformat(),
            "elapsed_seconds": round(elapsed, 3),
            "telemetry": str(telemetry_dir),
            "out": str(out_dir),
            "spark": remote or master or "local[*]",
            "configs": {k: str(v) for k, v in vars(configs).items() if v is not None},
            "stage_seconds": {k: round(v, 3) for k, v in progress.timings.items()},
        },
        "inputs": inputs,
        "rows": {
            "read": sum(int(i["read"]) for i in inputs),
            "used": sum(int(i["used"]) for i in inputs),
            "quarantined": sum(int(i["quarantined"]) for i in inputs),
        },
        **{r.name: r.summary for r in results},
    }


def _overview_section(summary: dict[str, object], results: list[StageResult]) -> Section:
    section = Section("Overview")
    rows = summary["rows"]
    assert isinstance(rows, dict)
    section.kpis([("policies evaluated", len(results)), ("telemetry rows read", rows["read"]),
                  ("used", rows["used"]), ("quarantined", rows["quarantined"])])
    section.text("Every input row is either used or quarantined with a reason "
                 "(quarantined rows are under quarantine/ in the output directory).")
    inputs = summary["inputs"]
    assert isinstance(inputs, list)
    section.table(["input", "read", "used", "quarantined"],
                  [(i["input"], i["read"], i["used"], i["quarantined"]) for i in inputs])
    for result in results:
        if result.console:
            section.heading(result.name)
            for line in result.console:
                section.text(line)
    return section


def print_outcome(outcome: RunOutcome, stream: TextIO = sys.stdout) -> None:
    """The final summary a person reads after a run."""
    rows = outcome.summary["rows"]
    assert isinstance(rows, dict)
    print("", file=stream)
    print("quotaplane run finished", file=stream)
    for result in outcome.results:
        for line in result.console:
            print(f"  [{result.name}] {line}", file=stream)
    inputs = outcome.summary["inputs"]
    assert isinstance(inputs, list)
    for i in inputs:
        print(f"  input {i['input']}: read {i['read']} = used {i['used']} + quarantined {i['quarantined']}",
              file=stream)
    print(f"  rows: read {rows['read']} = used {rows['used']} + quarantined {rows['quarantined']}",
          file=stream)
    print(f"  decisions and tables: {outcome.out_dir}", file=stream)
    print(f"  metrics:  {outcome.metrics_path}", file=stream)
    print(f"  summary:  {outcome.summary_path}", file=stream)
    print(f"  report:   {outcome.report.resolve().as_uri()}", file=stream)
