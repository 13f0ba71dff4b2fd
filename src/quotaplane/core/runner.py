"""The runner of `quotaplane run`: every policy's Spark stage over one telemetry directory.

Each policy (see `quotaplane.core.policy`) reads its own inputs, evaluates with Spark and gives
tables, metrics, a summary and report sections. The runner checks every configuration before Spark
starts, orders the policies by what they need from each other, runs the stages whose configuration
and required input are present, and writes `summary.json`, `metrics.prom` and `report.html`.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from prometheus_client import CollectorRegistry

from quotaplane import __version__
from quotaplane.core import exposition
from quotaplane.core.errors import ConfigError, ConfigErrors, InputError
from quotaplane.core.policy import (
    Outputs,
    Policy,
    Progress,
    RunConfigs,
    StageContext,
    StageResult,
    find_input,
    order,
)
from quotaplane.core.report import Section, write_report
from quotaplane.core.spark.driver_jit import NOT_CHOSEN, jit_for
from quotaplane.core.spark.expressions import (
    DEFAULT_INTERPRETED_BELOW_ROWS,
    count_rows,
    expressions_for,
)
from quotaplane.core.spark.failures import unreadable_file
from quotaplane.core.staging import staged_output


@dataclass
class RunOutcome:
    """What a run produced."""

    out_dir: Path
    report: Path
    summary_path: Path
    metrics_path: Path
    summary: dict[str, object]
    results: list[StageResult] = field(default_factory=list)
    #: inputs present in the telemetry directory that no policy evaluated (their config missing)
    not_evaluated: list[str] = field(default_factory=list)


def load_configs(policies: Sequence[Policy[Any]], configs: RunConfigs) -> dict[str, Any]:
    """Every policy's configuration (None where not configured), all checked before Spark starts:
    the errors of every file are reported together."""
    loaded: dict[str, Any] = {}
    errors: list[ConfigError] = []
    for policy in policies:
        try:
            loaded[policy.name] = policy.load_config(configs)
        except ConfigErrors as exc:
            errors.extend(exc.errors)
        except ConfigError as exc:
            errors.append(exc)
    if errors:
        raise ConfigErrors(errors)
    return loaded


def run_pipeline(
    telemetry_dir: Path,
    configs: RunConfigs,
    out_dir: Path,
    policies: Sequence[Policy[Any]],
    master: str | None = None,
    remote: str | None = None,
    stream: TextIO | None = sys.stderr,
    spark: object | None = None,
    detail: bool = False,
) -> RunOutcome:
    """Run every policy whose configuration and required input are present; write the outputs
    under `out_dir`."""
    if not telemetry_dir.is_dir():
        raise InputError(str(telemetry_dir), "--telemetry", str(telemetry_dir), "is not a directory")
    policies = order(policies)
    loaded = load_configs(policies, configs)
    runnable = [p for p in policies
                if loaded[p.name] is not None and p.runnable(telemetry_dir, loaded[p.name])]
    if not runnable:
        expected = ", ".join(f"{i.name} ({p.name})" for p in policies for i in p.inputs if i.required)
        raise InputError(str(telemetry_dir), "--telemetry", str(telemetry_dir),
                         f"no policy could run: expected telemetry ({expected}) with its configuration")
    used = {i.name for p in runnable for i in p.inputs}
    not_evaluated = sorted({i.name for p in policies for i in p.inputs
                            if i.name not in used and find_input(telemetry_dir, i.name) is not None})
    progress = Progress(stream)
    if stream is not None:
        for name in not_evaluated:
            print(f"  input {name} is present but not evaluated: its policy has no configuration",
                  file=stream)
    started = time.perf_counter()
    started_at = datetime.now(UTC)
    inputs = stage_inputs(telemetry_dir, runnable)
    jit = NOT_CHOSEN
    # pyspark is imported once a run goes ahead, not with this module
    from quotaplane.core.spark.session import build_session, launched_by_spark_submit, partitions_for_slots

    if spark is None:
        if remote is None and not launched_by_spark_submit():
            jit = jit_for(count_rows(inputs, DEFAULT_INTERPRETED_BELOW_ROWS))
        where = remote or master or "local[*]"
        with progress.step(f"starting Spark ({where})"):
            spark = build_session(master=master, remote=remote, driver_java_options=jit.options)
    registry = CollectorRegistry()
    with staged_output(out_dir) as staging:
        outputs = Outputs()
        with expressions_for(spark, inputs) as expressions:
            together = expressions.mode == "interpreted"
            # a small run: side by side, and its clean JSON Lines inputs read in the driver
            ctx = StageContext(spark=spark, telemetry_dir=telemetry_dir, out_dir=staging,  # type: ignore[arg-type]
                               registry=registry, progress=progress, published_dir=out_dir, detail=detail,
                               reads_in_driver=together)
            # a small run's shuffles in no more partitions than the task slots (None: unchanged)
            with partitions_for_slots(spark) if together else nullcontext() as partitions:
                try:
                    results = run_stages(ctx, runnable, loaded, outputs, together)
                except Exception as failure:
                    unreadable = unreadable_file(failure)  # the input's fault: named, no traceback
                    if unreadable is None:
                        raise
                    raise unreadable from failure
        elapsed = time.perf_counter() - started
        stages: dict[str, object] = (
            {"mode": "side by side", "reason": "a small run: its expressions are interpreted"} if together
            else {"mode": "one after another", "reason": f"expressions {expressions.mode}"})
        if partitions is not None:
            stages["shuffle_partitions"] = partitions
        reads = ({"mode": "in the driver", "reason": "a small run: clean JSON Lines inputs are read and "
                  "checked in the driver, any other by Spark (each input's reader)"} if together
                 else {"mode": "Spark", "reason": f"expressions {expressions.mode}"})
        choices = {"spark_expressions": expressions.as_dict(), "driver_jit": jit.as_dict(), "stages": stages,
                   "input_reads": reads}
        summary = _summary(telemetry_dir, configs, out_dir, master, remote, started_at, elapsed, results,
                           progress, not_evaluated, choices)
        (staging / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n",
                                              encoding="utf-8")
        exposition.write(registry, staging / "metrics.prom")
        with progress.step("writing the report"):
            write_report(
                staging / "report.html",
                "quotaplane report",
                f"telemetry {telemetry_dir} · generated {started_at:%Y-%m-%d %H:%M UTC} · "
                f"quotaplane {__version__}",
                [_overview_section(summary, results), *[s for r in results for s in r.sections]],
            )
    return RunOutcome(out_dir, out_dir / "report.html", out_dir / "summary.json", out_dir / "metrics.prom",
                      summary, results, not_evaluated)


def run_stages(ctx: StageContext, policies: Sequence[Policy[Any]], configs: dict[str, Any],
               outputs: Outputs, together: bool) -> list[StageResult]:
    """Every policy's stage (`policies` in `order`), their results in that order. `together`: side
    by side, each from its own thread, all started at once: a stage that asks for what another
    provides waits until it is provided (`Outputs.get`).

    A small run's stages are mostly Spark's fixed costs (planning, scheduling, small stages that
    leave a core idle), which other stages' work fills (docs/performance.md, "Stages side by
    side"). When a stage fails before it provides what another asks for, that one fails with it,
    the others finish, and the first failure in `policies`' order is raised. Each stage side by
    side registers its metrics in a registry of its own, added to `ctx.registry` in `policies`'
    order once all have finished: the metrics come in the same order in every run, whichever stage
    finishes first."""
    if not together:
        return [p.run_stage(ctx, configs[p.name], outputs) for p in policies]
    started: dict[str, Future[StageResult]] = {}
    registries = {p.name: CollectorRegistry() for p in policies}
    with ThreadPoolExecutor(max_workers=len(policies), thread_name_prefix="stage") as pool:
        for policy in policies:
            own = replace(ctx, registry=registries[policy.name])
            started[policy.name] = pool.submit(policy.run_stage, own, configs[policy.name], outputs)
            outputs.expect(started[policy.name], policy.provides)
    for future in started.values():
        failure = future.exception()
        if failure is not None:
            raise failure
    for policy in policies:
        ctx.registry.register(registries[policy.name])
    return [started[p.name].result() for p in policies]


def stage_inputs(telemetry_dir: Path, policies: Sequence[Policy[Any]]) -> list[str]:
    """The paths of the inputs the `policies` read from `telemetry_dir`, each once."""
    found = (find_input(telemetry_dir, i.name) for p in policies for i in p.inputs)
    return sorted({path for path in found if path is not None})


def _summary(telemetry_dir: Path, configs: RunConfigs, out_dir: Path, master: str | None,
             remote: str | None, started_at: datetime, elapsed: float, results: list[StageResult],
             progress: Progress, not_evaluated: list[str], choices: dict[str, object]
             ) -> dict[str, object]:
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
            **choices,
        },
        "inputs": inputs,
        "inputs_not_evaluated": not_evaluated,
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
                 "(quarantined rows are under quarantine/ in the output directory). The inputs are those "
                 "of the telemetry directory named above.")
    inputs = summary["inputs"]
    assert isinstance(inputs, list)
    section.table(["input", "rows read", "used", "quarantined"],
                  [(Path(i["input"]).name, i["read"], i["used"], i["quarantined"]) for i in inputs])
    skipped = [s for i in inputs for s in i.get("skipped", [])]
    if skipped:
        section.note(f"Not read (Spark skips files whose names start with _ or .): {', '.join(skipped)}")
    if any(r.console for r in results):
        section.heading("Over the whole period")
        section.table(["policy", "outcome"], [(r.name, line.strip()) for r in results for line in r.console])
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
        for skipped in i.get("skipped", []):
            print(f"    skipped {skipped}: Spark does not read files whose names start with _ or .",
                  file=stream)
    for name in outcome.not_evaluated:
        print(f"  input {name}: present but not evaluated (its policy has no configuration)", file=stream)
    print(f"  rows: read {rows['read']} = used {rows['used']} + quarantined {rows['quarantined']}",
          file=stream)
    print(f"  decisions and tables: {outcome.out_dir}", file=stream)
    print(f"  metrics:  {outcome.metrics_path}", file=stream)
    print(f"  summary:  {outcome.summary_path}", file=stream)
    print(f"  report:   {outcome.report.resolve().as_uri()}", file=stream)
