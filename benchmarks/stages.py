"""The Spark side of a comparison: a policy's stage of `quotaplane run`, and the bare Spark job over
the same Parquet input, in the same SparkSession.

Memory is measured twice: the peak resident memory of the whole process tree (this interpreter, the
Spark JVM and its Python workers; the JVM keeps the heap it has grown, up to `spark.driver.memory`),
and the driver JVM's own heap peak over the step (after a full GC, the peaks of its heap pools,
summed; the old generation's peak is the data the step kept alive).

A stage is timed whole (`stage_seconds`: from reading its input to its report sections, plots
included) and by its own progress steps: `decisions_seconds` is the sum of every step but the one
labelled as the report's ("... metrics and report"), that is reading and validating the input,
evaluating the policy and writing every table. Report sections built outside a step count in
`stage_seconds` only. Repeated, a stage's point is its fastest run, with the highest memory peaks
and every run's times (the first run of a plan in a JVM pays its JIT compilation). The bare job
runs once per input of the policy (scan, group by the policy's key and time bucket, aggregate,
write Parquet); its time is the sum.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry
from pyspark.sql import SparkSession

from benchmarks.baseline import bare_job
from benchmarks.datasets import Dataset
from benchmarks.floors import FLOORS, floor_job
from benchmarks.measure import measure
from benchmarks.policies import PolicySpec
from quotaplane.core.policy import Outputs, Progress, RunConfigs, StageContext, StageResult, find_input
from quotaplane.core.runner import stage_inputs
from quotaplane.core.spark.expressions import expressions_for
from quotaplane.registry import policy as registered

REPORT_STEP = "report"  # a progress step whose label has this word builds the report, not decisions


class JvmHeapPeak:
    """The driver JVM's heap peak over a block: a full GC and a reset of the heap pools' peaks at
    entry, their peaks at exit. Nothing is measured without a local JVM (Spark Connect)."""

    def __init__(self, spark: SparkSession) -> None:
        self.pools: list[Any] = []
        self.jvm: Any = None
        self.peaks: dict[str, int] = {}
        try:
            self.jvm = spark.sparkContext._jvm
            beans = self.jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans()
            self.pools = [p for p in beans if p.getType().toString() == "Heap memory"]
        except Exception:
            self.pools = []

    def __enter__(self) -> JvmHeapPeak:
        if self.pools:
            self.jvm.System.gc()
            for pool in self.pools:
                pool.resetPeakUsage()
        return self

    def __exit__(self, *exc: object) -> None:
        self.peaks = {str(p.getName()): int(p.getPeakUsage().getUsed()) for p in self.pools}

    @property
    def heap_bytes(self) -> int | None:
        return sum(self.peaks.values()) if self.peaks else None

    @property
    def old_gen_bytes(self) -> int | None:
        old = [v for name, v in self.peaks.items() if "Old" in name or "Tenured" in name]
        return sum(old) if old else None


@dataclass
class StageRun:
    seconds: float  # the whole stage
    decisions_seconds: float  # its progress steps except the report's
    steps: dict[str, float]
    peak_rss_bytes: int  # this process, the Spark JVM and its Python workers
    jvm_heap_peak_bytes: int | None  # the driver JVM's heap pools' peaks, summed
    jvm_old_gen_peak_bytes: int | None
    read_counts: list[dict[str, Any]]
    summary: dict[str, Any]
    # every run's whole-stage and decisions seconds, in the order run: the first pays the JIT
    # compilation of the plan's generated code (docs/performance.md, "Targets")
    run_seconds: list[float] = field(default_factory=list)
    run_decisions_seconds: list[float] = field(default_factory=list)
    # how Spark evaluated the stage's expressions, as `quotaplane run` chooses them for the input
    # ("interpreted" or "generated", `quotaplane.core.spark.expressions`)
    expressions: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def fastest(runs: list[StageRun]) -> StageRun:
    """The fastest of `runs` (whole-stage seconds; the first of equals), with the highest memory
    peaks of them all and every run's times in the order run."""
    best = min(runs, key=lambda r: r.seconds)
    return replace(
        best,
        peak_rss_bytes=max(r.peak_rss_bytes for r in runs),
        jvm_heap_peak_bytes=_highest(r.jvm_heap_peak_bytes for r in runs),
        jvm_old_gen_peak_bytes=_highest(r.jvm_old_gen_peak_bytes for r in runs),
        run_seconds=[r.seconds for r in runs],
        run_decisions_seconds=[r.decisions_seconds for r in runs],
    )


def _highest(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


@dataclass
class BareRun:
    seconds: float
    peak_rss_bytes: int
    output_rows: int
    per_input: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def input_path(dataset: Dataset, kind: str) -> str:
    path = find_input(dataset.path, kind)
    if path is None:
        raise FileNotFoundError(f"{dataset.path}: no {kind} input")
    return path


def warm_page_cache(dataset: Dataset, policy: PolicySpec) -> None:
    """Read the input files once, so the first timed reader does not pay for the disk alone."""
    for kind in policy.kinds():
        for file in sorted(Path(input_path(dataset, kind)).rglob("*")):
            if file.is_file():
                with file.open("rb") as handle:
                    while handle.read(1 << 22):
                        pass


def run_stage(spark: SparkSession, policy: PolicySpec, dataset: Dataset, configs: RunConfigs,
              out: Path) -> StageRun:
    """Run the policy's stage once, in a fresh context (`fastest` of a point's runs lists every
    run's times)."""
    stage = registered(policy.name)
    config = stage.load_config(RunConfigs(**{policy.config_field: getattr(configs, policy.config_field)}))
    if config is None or find_input(dataset.path, stage.inputs[0].name) is None:
        raise RuntimeError(f"the {policy.name} stage cannot run on {dataset.path} "
                           "(its input or configuration is missing)")
    inputs = stage_inputs(dataset.path, [stage])
    progress = Progress(stream=None)
    ctx = StageContext(spark=spark, telemetry_dir=dataset.path, out_dir=out, registry=CollectorRegistry(),
                       progress=progress)
    with JvmHeapPeak(spark) as heap, expressions_for(spark, inputs) as chosen:
        result, timing = measure(lambda: stage.run_stage(ctx, config, Outputs()))
    spark.catalog.clearCache()  # what a stage leaves cached must not weigh on the next measurement
    assert isinstance(result, StageResult)
    steps = dict(progress.timings)
    decisions = sum(s for label, s in steps.items() if REPORT_STEP not in label)
    return StageRun(timing.seconds, decisions, steps, timing.peak_rss_bytes, heap.heap_bytes,
                    heap.old_gen_bytes, [c.as_dict() for c in result.read_counts], result.summary,
                    expressions=chosen.mode)


def run_bare(spark: SparkSession, policy: PolicySpec, dataset: Dataset, out: Path) -> BareRun:
    """The bare Spark job over each input of the policy, once; times summed, peaks maximised."""
    total, peak, rows, per_input = 0.0, 0, 0, {}
    for spec in policy.inputs:
        path = input_path(dataset, spec.kind)
        bucket = spec.bucket_ms(dataset.manifest)
        count, timing = measure(
            lambda path=path, spec=spec, bucket=bucket: bare_job(
                spark, path, spec.keys, spec.time_col, bucket, spec.value_col, out / spec.kind))
        total += timing.seconds
        peak = max(peak, timing.peak_rss_bytes)
        rows += count
        per_input[spec.kind] = timing.seconds
    return BareRun(total, peak, rows, per_input)


def run_floor(spark: SparkSession, policy: PolicySpec, dataset: Dataset, out: Path) -> BareRun | None:
    """The policy's floor job (`benchmarks.floors`) over its inputs, once, or None when it has none."""
    if policy.name not in FLOORS:
        return None
    paths = {spec.kind: input_path(dataset, spec.kind) for spec in policy.inputs}
    count, timing = measure(lambda: floor_job(spark, policy.name, paths, dataset.manifest, out))
    return BareRun(timing.seconds, timing.peak_rss_bytes, count)


def fastest_bare(runs: list[BareRun]) -> BareRun:
    """The fastest of the runs of one job: each input's fastest time (summed over the inputs when
    the runs time them apart), the highest memory peak."""
    inputs = runs[0].per_input
    per_input = {kind: min(r.per_input[kind] for r in runs) for kind in inputs}
    seconds = sum(per_input.values()) if per_input else min(r.seconds for r in runs)
    return BareRun(seconds, max(r.peak_rss_bytes for r in runs), runs[0].output_rows, per_input)
