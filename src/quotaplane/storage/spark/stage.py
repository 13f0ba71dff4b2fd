"""The storage stage of `quotaplane run`: telemetry in; decisions, metrics, summary and report out.

Reads `volumes`, `membership` and `collection_errors` (each validated once and its typed rows
cached, so every later step reads them), writes any quarantined rows to `quarantine/<record>`, the
decisions of the storage configuration to `storage_decisions` (and of the comparison configuration
to `storage_decisions_compare`), with `--detail` the counted volume observations with their
thresholds to `storage_volume_observations` (a row per volume and round: as large as the input),
registers the spec's metrics and returns the summary and report. The per-volume parts of the summary
and report come from one small aggregate of the observations (`summary.volume_profile`).
It provides `LastVolumeTime` once the inputs are read, and `StorageDecisions` (the decisions table
read back from Parquet) once it is written, before the comparison, the summary and the report.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame

from quotaplane.core.policy import Input, Outputs, StageContext, StageResult
from quotaplane.core.records import RecordSchema
from quotaplane.core.spark.driver_reads import read_run_input
from quotaplane.core.spark.readers import CheckedInput, ReadCounts, UsedAggregate, check_once
from quotaplane.core.spark.schemas import spark_schema
from quotaplane.core.spark.side_by_side import side_by_side
from quotaplane.core.spark.tables import read_written, write_parquet
from quotaplane.core.spark.time_span import TimeSpan
from quotaplane.storage.config import StorageConfig
from quotaplane.storage.metrics import StorageMetrics
from quotaplane.storage.outputs import LastVolumeTime, StorageDecisions
from quotaplane.storage.records import COLLECTION_ERRORS, INPUTS, VOLUMES
from quotaplane.storage.report import StorageReportData, build_sections, console_lines
from quotaplane.storage.spark import summary as S
from quotaplane.storage.spark.decisions import StorageEvaluation, evaluate

VOLUMES_PLOTTED = 6
OBSERVATIONS = "storage_volume_observations"  # written with `quotaplane run --detail`
LAST_VOLUME_TS = "last_volume_ts"
UNNAMED_ERRORS = "unnamed_errors"


def _read(ctx: StageContext) -> tuple[dict[str, DataFrame], list[ReadCounts], list[CheckedInput]]:
    """Check each input in one scan (`check_once`), write its quarantine if any; absent inputs are
    empty. The inputs' scans run side by side: the small ones cost Spark a job each, mostly the
    driver's work, which overlaps the others' tasks. The volumes' scan also takes their last time,
    the errors' scan whether a used error names no cluster (`_scanned`)."""
    used: dict[str, DataFrame] = {}
    present: list[tuple[Input, str]] = []
    for item in INPUTS:
        path = ctx.find_input(item.name)
        if path is None:
            used[item.name] = ctx.spark.createDataFrame([], spark_schema(item.schema))
        else:
            present.append((item, path))

    def check(schema: RecordSchema, path: str) -> Callable[[], CheckedInput]:
        extra = None
        if schema is VOLUMES:  # their last time is the forecast's "as of"
            extra = {LAST_VOLUME_TS: UsedAggregate("max", "ts")}
        elif schema is COLLECTION_ERRORS:
            extra = {UNNAMED_ERRORS: UsedAggregate("max", "cluster", null=True)}
        return lambda: check_once(read_run_input(ctx, schema, path),
                                  ctx.out_dir / "quarantine" / schema.name, over_used=extra)

    checked = side_by_side(*(check(item.schema, path) for item, path in present)) if present else []
    for (item, _), result in zip(present, checked, strict=True):
        used[item.name] = result.used
    return used, [c.counts for c in checked], checked


def _scanned(checked: list[CheckedInput], name: str) -> Any:
    """An aggregate an input's counting scan took (`_read`); None without the input or its used rows."""
    return next((c.aggregates[name] for c in checked if name in c.aggregates), None)


@dataclass
class _Decided:
    """A configuration's decisions read back; with `observations`, the counted volume observations
    and the evaluation whose keyed rows stay cached until `release()`; the decisions' time span
    (first and last `ts_ms`, None without decisions), observed by the job that wrote them."""

    decisions: DataFrame
    observations: DataFrame | None
    evaluation: StorageEvaluation | None
    span: tuple[int, int] | None


def _decide(ctx: StageContext, config: StorageConfig, inputs: dict[str, DataFrame], table: str,
            observations: bool, unnamed_errors: bool) -> _Decided:
    """Write the decisions (see `_Decided`). With `observations`, they are written to
    `storage_volume_observations` and read back with `ctx.detail`; the decisions' job computes the
    keyed round rows once, and the observations (their table or the report's one aggregate) read
    them again instead of shuffling and sorting the input a second time."""
    ev = evaluate(config, inputs["volumes"], inputs["membership"], inputs["collection_errors"],
                  persist=observations, unnamed_errors=unnamed_errors)
    span = TimeSpan("storage_decision_span")
    try:
        write_parquet(span.observe(ev.decisions), ctx.out_dir / table)
        if observations and ctx.detail:
            write_parquet(ev.volumes, ctx.out_dir / OBSERVATIONS)
    except BaseException:
        ev.release()
        raise
    decisions = read_written(ctx.spark, ctx.out_dir / table, ev.decisions.schema)
    time_span = span.value
    if not observations:
        ev.release()
        return _Decided(decisions, None, None, time_span)
    if ctx.detail:
        return _Decided(decisions, read_written(ctx.spark, ctx.out_dir / OBSERVATIONS, ev.volumes.schema), ev,
                        time_span)
    return _Decided(decisions, ev.volumes, ev, time_span)


def run_stage(ctx: StageContext, config: StorageConfig, compare: StorageConfig | None,
              outputs: Outputs) -> StageResult:
    """Evaluate storage quotas (`config`, and `compare` beside it when given)."""
    checked: list[CheckedInput] = []
    evaluations: list[StorageEvaluation] = []
    try:
        with ctx.progress.step("storage: reading and validating telemetry"):
            inputs, counts, checked = _read(ctx)
            # a used error naming no cluster applies to every cluster (`rounds._unified`)
            unnamed = bool(_scanned(checked, UNNAMED_ERRORS))
        outputs.provide(LastVolumeTime(_scanned(checked, LAST_VOLUME_TS)))  # the forecast goes on now
        with ctx.progress.step(f"storage: {config.evaluation} decisions"):
            decided = _decide(ctx, config, inputs, "storage_decisions", True, unnamed)
            assert decided.evaluation is not None
            evaluations.append(decided.evaluation)
        # the stages waiting for the decisions go on now, beside the comparison, summary and report
        outputs.provide(StorageDecisions(decided.decisions))
        compared = None
        if compare is not None:
            with ctx.progress.step(f"storage: {compare.evaluation} decisions (comparison)"):
                compared = _decide(ctx, compare, inputs, "storage_decisions_compare", False, unnamed)
        with ctx.progress.step("storage: summary, metrics and report"):
            main, states, profile = S.summarise("main", config, decided.decisions, decided.span,
                                                decided.observations)
            other = None
            if compare is not None and compared is not None:
                other, compared_states, _ = S.summarise("compare", compare, compared.decisions, compared.span,
                                                        None)
                states += compared_states
            ctx.registry.register(StorageMetrics(states))
            closest = S.closest_volumes(profile, VOLUMES_PLOTTED)
            series = S.volume_series(profile, closest)
            reads = [c.as_dict() for c in counts]
            sections = build_sections(StorageReportData(main, other, series, len(closest),
                                                        S.volume_count(profile), reads))
    finally:
        for c in checked:
            c.release()
        for e in evaluations:
            e.release()
    paths = {"decisions": str(ctx.published / "storage_decisions"),
             "quarantine": str(ctx.published / "quarantine")}
    if ctx.detail:
        paths["volume_observations"] = str(ctx.published / OBSERVATIONS)
    summary: dict[str, object] = {**main.as_dict(), "warnings": list(config.warnings),
                                  "inputs": [c.as_dict() for c in counts], "outputs": paths}
    if other is not None:
        summary["compare"] = other.as_dict()
        paths["decisions_compare"] = str(ctx.published / "storage_decisions_compare")
    console = console_lines(main) + (console_lines(other) if other else [])
    return StageResult(name="storage", summary=summary, read_counts=counts, sections=sections,
                       console=console)
