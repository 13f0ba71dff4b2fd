"""`python -m benchmarks.run` (`make bench`): how fast and how far each policy pipeline goes.

For each tier and scale: simulate the input once (Parquet, `benchmarks/data/`), write the policies'
configurations for the simulated fleet, then per policy, in one warm SparkSession: the bare Spark
job over the same input, the floor job of the policy's semantics where it has one
(`benchmarks/floors.py`), the policy's stage of `quotaplane run`, and the reference engine over
(a prefix of) the same input in a fresh interpreter. Writes `benchmarks/results/<tier>-<date>.json`
per tier (and the extrapolated L tier) and the tables of `docs/performance.md`.

    python -m benchmarks.run [--tier S,M] [--policies storage,clients,topics,backlog,notices]
                             [--scales 1,2,4,8] [--quick] [--repeat N] [--reference-rows N] ...

`--quick` is a smoke run on tiny inputs: its results go to `benchmarks/work/results/` and the docs
are left alone unless `--docs` names a file.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
import traceback
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from benchmarks import configs as policy_configs
from benchmarks import docs, machine, prefix, results, stages
from benchmarks.datasets import DATA_DIR, Dataset, ensure, scale_label
from benchmarks.policies import POLICIES, PolicySpec, parse_policies
from benchmarks.tiers import QUICK, TIERS, Tier, quick
from quotaplane.core.policy import RunConfigs

HERE = Path(__file__).resolve().parent
WORK_DIR = HERE / "work"
DEFAULT_TIERS = "S,M"
QUICK_TIERS = "S"
DEFAULT_SCALES = "1,2,4,8"
QUICK_SCALES = "1,2"
DEFAULT_REFERENCE_ROWS = 200_000
QUICK_REFERENCE_ROWS = 500


@dataclass
class Options:
    tiers: list[Tier]
    policies: list[PolicySpec]
    scales: list[float]
    quick: bool = False
    repeat: int = 1
    reference_rows: int = DEFAULT_REFERENCE_ROWS
    data_dir: Path = DATA_DIR
    work_dir: Path = WORK_DIR
    results_dir: Path = results.RESULTS_DIR
    docs: Path | None = docs.DOC
    extrapolate: bool = True
    warmup: bool = True
    master: str = "local[*]"
    driver_memory: str = "4g"
    command: str = "python -m benchmarks.run"


def _scales(text: str) -> list[float]:
    try:
        values = [float(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--scales={text}: must be numbers separated by commas") from None
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"--scales={text}: must be positive numbers, e.g. 1,2,4,8")
    return sorted(set(values))


def _tiers(text: str) -> list[Tier]:
    names = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in names if t not in TIERS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"--tier={text}: must name some of {', '.join(TIERS)}")
    return [TIERS[t] for t in names]


def _policies(text: str) -> list[PolicySpec]:
    try:
        return parse_policies(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _at_least_one(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def parse_args(argv: list[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.split("\n\n")[0])
    parser.add_argument("--tier", type=_tiers, default=None, metavar="S,M",
                        help=f"tiers to measure (default {DEFAULT_TIERS}; L is extrapolated from the largest "
                        "measured tier unless measured itself)")
    parser.add_argument("--policies", type=_policies, default=None, metavar="LIST",
                        help=f"policies (default {','.join(POLICIES)})")
    parser.add_argument("--scales", type=_scales, default=None, metavar="1,2,4,8",
                        help=f"multiples of the tier's time span (default {DEFAULT_SCALES}; "
                        f"{QUICK_SCALES} with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: tiny inputs stand in for the tiers (results in benchmarks/work/)")
    parser.add_argument("--repeat", type=_at_least_one, default=1, metavar="N",
                        help="rounds of the Spark measurements (the bare job, the floor job, the stage: "
                        "one run of each per round, in turn), the fastest of each kept (default 1)")
    parser.add_argument("--reference-rows", type=_at_least_one, default=None, metavar="N",
                        help="the reference engine runs on the first N rows of the main input and is scaled "
                        f"to the whole input (default {DEFAULT_REFERENCE_ROWS:,}; "
                        f"{QUICK_REFERENCE_ROWS} with --quick)")
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR, help="simulated inputs (reused)")
    parser.add_argument("--work-dir", type=Path, default=WORK_DIR, help="outputs of the measured jobs")
    parser.add_argument("--results-dir", type=Path, default=None,
                        help="where <tier>-<date>.json go (default benchmarks/results/; "
                        "benchmarks/work/results/ with --quick)")
    parser.add_argument("--docs", default=None, metavar="FILE|none",
                        help="the performance doc to update (default docs/performance.md; none with --quick)")
    parser.add_argument("--no-extrapolate", action="store_true", help="do not extrapolate the L tier")
    parser.add_argument("--no-warmup", action="store_true",
                        help="skip the untimed warm-up run of each stage and bare job on a tiny input")
    parser.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    parser.add_argument("--driver-memory", default="4g",
                        help="spark.driver.memory (default 4g: no stage may need more at M 8x)")
    args = parser.parse_args(argv)
    quick_run = args.quick
    results_dir = args.results_dir or (args.work_dir / "results" if quick_run else results.RESULTS_DIR)
    doc: Path | None = docs.DOC if not quick_run else None
    if args.docs is not None:
        doc = None if args.docs == "none" else Path(args.docs)
    return Options(
        tiers=args.tier or _tiers(QUICK_TIERS if quick_run else DEFAULT_TIERS),
        policies=args.policies or list(POLICIES.values()),
        scales=args.scales or _scales(QUICK_SCALES if quick_run else DEFAULT_SCALES), quick=quick_run,
        repeat=args.repeat,
        reference_rows=args.reference_rows or (QUICK_REFERENCE_ROWS if quick_run else DEFAULT_REFERENCE_ROWS),
        data_dir=args.data_dir, work_dir=args.work_dir, results_dir=results_dir, docs=doc,
        extrapolate=not args.no_extrapolate, warmup=not args.no_warmup, master=args.master,
        driver_memory=args.driver_memory,
        command=" ".join(["python -m benchmarks.run",
                          *map(shlex.quote, argv if argv is not None else sys.argv[1:])]))


class Log:
    def __init__(self, stream: TextIO | None) -> None:
        self.stream = stream
        self.start = time.perf_counter()

    def __call__(self, message: str) -> None:
        if self.stream:
            print(f"[{time.perf_counter() - self.start:7.1f}s] {message}", file=self.stream, flush=True)


def _measure_point(spark: Any, opts: Options, policy: PolicySpec, dataset: Dataset, configs: RunConfigs,
                   work: Path, log: Log) -> dict[str, Any]:
    rows = {k: dataset.rows(k) for k in policy.kinds()}
    stages.warm_page_cache(dataset, policy)
    log(f"  {policy.name}: bare Spark job over {sum(rows.values()):,} rows")
    # the jobs take turns, one run of each per round: a machine that slows down or speeds up during
    # the point weighs on the stage and on its baselines alike
    bares: list[stages.BareRun] = []
    floors: list[stages.BareRun] = []
    stage_runs: list[stages.StageRun] = []
    for _ in range(opts.repeat):
        bares.append(stages.run_bare(spark, policy, dataset, work / "bare"))
        floor_run = stages.run_floor(spark, policy, dataset, work / "floor")
        if floor_run is not None:
            floors.append(floor_run)
        stage_runs.append(stages.run_stage(spark, policy, dataset, configs, work / "out"))
    bare = stages.fastest_bare(bares)
    floor = stages.fastest_bare(floors) if floors else None
    log(f"  {policy.name}: stage (bare job {bare.seconds:.1f}s"
        + (f", floor job {floor.seconds:.1f}s)" if floor else ")"))
    stage = stages.fastest(stage_runs)
    runs = stage.run_seconds
    fastest = f"; the fastest of {len(runs)}, the first took {runs[0]:.1f}s" if len(runs) > 1 else ""
    log(f"  {policy.name}: reference engine (stage {stage.seconds:.1f}s, "
        f"decisions {stage.decisions_seconds:.1f}s{fastest})")
    pre = prefix.prepare(dataset, policy, opts.reference_rows)
    config = getattr(configs, policy.config_field)
    reference = prefix.run(policy, config, pre, work / "reference.jsonl")
    log(f"  {policy.name}: reference {reference.seconds:.1f}s over {reference.prefix_rows:,} rows "
        f"(whole input estimated {reference.estimated_seconds:.1f}s)")
    return results.point(dataset.scale, policy, rows, stage, bare, reference, floor)


def bench_tier(spark: Any, opts: Options, tier: Tier, log: Log, path: Path) -> dict[str, Any]:
    """Every scale of one tier, every policy; the results document, also written to `path` after
    each scale (an interrupted run keeps what it measured)."""
    started = datetime.now(UTC)
    described = machine.describe(spark)
    per_policy: dict[str, dict[str, Any]] = {p.name: {"points": [], "grouping": p.grouping,
                                                       "inputs": p.kinds()} for p in opts.policies}
    datasets = []
    for scale in opts.scales:
        log(f"tier {tier.name} {scale_label(scale)}: input")
        dataset = ensure(tier, scale, opts.data_dir)
        datasets.append({"scale": scale, "path": str(dataset.path), "rows": dataset.manifest["rows"],
                         "generated_seconds": dataset.generated_seconds,
                         "span_ms": [dataset.manifest["start_ms"], dataset.manifest["end_ms"]],
                         "window_ms": dataset.manifest["window_ms"]})
        made = dataset.generated_seconds
        log(f"tier {tier.name} {scale_label(scale)}: {sum(dataset.manifest['rows'].values()):,} rows "
            + ("reused" if made is None else f"simulated in {made:.1f}s"))
        work = opts.work_dir / tier.name / scale_label(scale)
        configs = policy_configs.write(tier, scale, work / "config")
        for policy in opts.policies:
            bench = per_policy[policy.name]
            if bench.get("error"):
                continue
            try:
                bench["points"].append(_measure_point(spark, opts, policy, dataset, configs,
                                                      work / policy.name, log))
            except Exception as exc:
                bench["error"] = f"{type(exc).__name__}: {exc}"
                log(f"  {policy.name}: FAILED: {bench['error']}")
                traceback.print_exc()
        results.write(path, _document(spark, opts, tier, started, described, datasets, per_policy))
    return _document(spark, opts, tier, started, described, datasets, per_policy)


def _document(spark: Any, opts: Options, tier: Tier, started: datetime, described: dict[str, Any],
              datasets: list[dict[str, Any]], per_policy: dict[str, dict[str, Any]]) -> dict[str, Any]:
    for name, bench in per_policy.items():
        bench["fits"] = results.fits(bench["points"]) if bench["points"] else None
        bench["targets"] = results.targets(tier.name, name, bench["points"])
    return {
        "tier": tier.describe(),
        "quick": opts.quick,
        "date": started.date().isoformat(),
        "started_at": started.isoformat(),
        "finished_at": datetime.now(UTC).isoformat(),
        "command": opts.command,
        "simulate": tier.command(),
        "scales": opts.scales,
        "repeat": opts.repeat,
        "reference_rows": opts.reference_rows,
        "spark": {"master": spark.sparkContext.master, "driver_memory": opts.driver_memory,
                  "shuffle_partitions": spark.conf.get("spark.sql.shuffle.partitions"),
                  "adaptive": spark.conf.get("spark.sql.adaptive.enabled")},
        "machine": {**described, "load_average_at_end": machine.load_average()},
        "method": results.METHOD,
        "datasets": datasets,
        "policies": per_policy,
    }


def _warmup(spark: Any, opts: Options, log: Log) -> None:
    """One untimed run of each stage and bare job on a tiny input: JIT, class loading, Python workers."""
    log("warm-up on a tiny input")
    dataset = ensure(QUICK, 1.0, opts.data_dir / "warmup")
    work = opts.work_dir / "warmup"
    configs = policy_configs.write(QUICK, 1.0, work / "config")
    for policy in opts.policies:
        try:
            stages.run_bare(spark, policy, dataset, work / policy.name / "bare")
            stages.run_floor(spark, policy, dataset, work / policy.name / "floor")
            stages.run_stage(spark, policy, dataset, configs, work / policy.name / "out")
        except Exception as exc:  # the measured run reports it
            log(f"  warm-up of {policy.name} failed: {type(exc).__name__}: {exc}")


@dataclass
class Outcome:
    """The files a run wrote, and whether a policy failed."""

    written: list[Path] = field(default_factory=list)
    failed: bool = False


def run_benchmarks(opts: Options, spark: Any | None = None, stream: TextIO | None = sys.stderr) -> Outcome:
    """Measure; write the results files (and the docs)."""
    log = Log(stream)
    own = spark is None
    if spark is None:
        from quotaplane.core.spark.session import build_session

        log(f"starting Spark ({opts.master}, driver memory {opts.driver_memory})")
        spark = build_session(master=opts.master, app_name="quotaplane-bench",
                              extra_conf={"spark.driver.memory": opts.driver_memory})
    outcome = Outcome()
    written = outcome.written
    try:
        if opts.warmup:
            _warmup(spark, opts, log)
        measured: list[dict[str, Any]] = []
        for tier in opts.tiers:
            run_tier = quick(tier) if opts.quick else tier
            path = results.result_path(opts.results_dir, run_tier.name)
            document = bench_tier(spark, opts, run_tier, log, path)
            outcome.failed |= any(b.get("error") for b in document["policies"].values())
            written.append(path)
            measured.append({**document, "file": path.name})
            log(f"wrote {path}")
        target = TIERS["L"]
        if opts.extrapolate and measured and all(m["tier"]["name"].split("-")[0] != "L" for m in measured):
            source = max(measured, key=lambda m: m["tier"]["volumes"] * m["tier"]["clients"])
            name = "L-quick" if opts.quick else "L"
            estimate = results.extrapolate(source, {**target.describe(), "name": name})
            path = results.write(results.result_path(opts.results_dir, name), estimate)
            written.append(path)
            log(f"wrote {path} (extrapolated from tier {source['tier']['name']})")
        if opts.docs is not None:
            doc = docs.update(results.latest(opts.results_dir), opts.docs)
            written.append(doc)
            log(f"updated {doc}")
    finally:
        if own:
            spark.stop()
    if outcome.failed:
        log("some policies failed: see the errors above and in the results files")
    return outcome


def main(argv: list[str] | None = None) -> int:
    outcome = run_benchmarks(parse_args(argv))
    for path in outcome.written:
        print(path)
    return 1 if outcome.failed else 0


if __name__ == "__main__":
    sys.exit(main())

