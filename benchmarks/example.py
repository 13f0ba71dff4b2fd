"""The bundled example (`make run`) against its floor job, each a new process, pairs in turn
(`make bench` does not run it).

    .venv/bin/python -m benchmarks.example [--pairs 6] [--out FILE]

`make run`'s target is a time after Spark's start, and a new driver JVM's first queries weigh on it
whatever they compute. The floor job measures that weight: a new process starts Spark as
`quotaplane run` starts it for the example (the same driver JIT and class archive), takes the
run's small-run settings (interpreted expressions, shuffles in as many partitions as task slots)
and runs the bare job of `benchmarks.baseline` over each of the example's seven inputs, read by
Spark's JSON reader with the record's schema (no checks), the seven side by side as the run's
stages go: a scan, a grouping by the policy's key and time bucket, a Parquet write and its count.

Each pair runs the example (`quotaplane run --quiet`) and the floor job in turn, after one
untimed run of each. Both report their time after Spark's start: the run's `summary.json`
(elapsed less the start step), the floor job its own. Prints each pair, the medians and the
median of the pairwise ratios; `--out FILE` writes them as JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from benchmarks.baseline import bare_aggregate
from benchmarks.machine import describe, load_average
from benchmarks.policies import POLICIES, InputSpec
from quotaplane.core.policy import find_input
from quotaplane.core.spark.driver_jit import jit_for
from quotaplane.core.spark.expressions import DEFAULT_INTERPRETED_BELOW_ROWS, count_rows, expressions_for
from quotaplane.core.spark.schemas import spark_schema
from quotaplane.core.spark.session import build_session, partitions_for_slots
from quotaplane.core.spark.side_by_side import side_by_side
from quotaplane.registry import all_inputs
from quotaplane.run_command import bundled_example

START_STEP = "starting Spark"


def example_inputs() -> tuple[list[tuple[InputSpec, str]], dict[str, Any]]:
    """The bare job's grouping and the path of each input of the bundled example, and its manifest."""
    telemetry, _ = bundled_example()
    inputs = [(spec, path) for p in POLICIES.values() for spec in p.inputs
              if (path := find_input(telemetry, spec.kind)) is not None]
    return inputs, json.loads((telemetry / "manifest.json").read_text())


def floor_tables(spark: SparkSession, out: Path) -> dict[str, Any]:
    """The bare jobs over the example's inputs side by side, with a small run's settings (module
    docstring); the inputs, the rows written and the expressions' mode."""
    inputs, manifest = example_inputs()
    schemas = {i.name: i.schema for i in all_inputs()}

    def job(spec: InputSpec, path: str) -> Callable[[], int]:
        rows = spark.read.schema(spark_schema(schemas[spec.kind])).json(path)
        bucket_ms, target = spec.bucket_ms(manifest), out / spec.kind
        return lambda: bare_aggregate(rows, spec.keys, spec.time_col, bucket_ms, spec.value_col, target)

    with expressions_for(spark, [path for _, path in inputs]) as expressions, partitions_for_slots(spark):
        written = side_by_side(*(job(spec, path) for spec, path in inputs))
    return {"inputs": [spec.kind for spec, _ in inputs], "output_rows": sum(written),
            "expressions": expressions.mode}


def floor_job(out: Path) -> dict[str, Any]:
    """The floor job in this process: Spark started as `quotaplane run` starts it for the example,
    then `floor_tables`; Spark's start and the seconds after it."""
    inputs, _ = example_inputs()
    began = time.perf_counter()
    jit = jit_for(count_rows([path for _, path in inputs], DEFAULT_INTERPRETED_BELOW_ROWS))
    spark = build_session(driver_java_options=jit.options)
    started = time.perf_counter()
    tables = floor_tables(spark, out)
    done = time.perf_counter()
    spark.stop()
    return {"start_seconds": started - began, "after_start_seconds": done - started, **tables}


def _child(command: list[str], what: str) -> tuple[float, str]:
    """Run `command` in a new process: its wall time and its output; stops the benchmark with its
    error output when it fails."""
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{what} failed (exit {done.returncode}):\n{done.stderr}")
    return time.perf_counter() - began, done.stdout


def run_example(work: Path) -> dict[str, Any]:
    """`quotaplane run --quiet` on the bundled example in a new process: its wall time and, from
    its `summary.json`, Spark's start and the seconds after it."""
    out = work / "run"
    command = Path(sys.executable).parent / "quotaplane"
    wall, _ = _child([str(command), "run", "--quiet", "--out", str(out)], "quotaplane run")
    return {"wall_seconds": wall, **spark_start(json.loads((out / "summary.json").read_text())["run"])}


def spark_start(run: dict[str, Any]) -> dict[str, float]:
    """Spark's start and the seconds after it, from `summary.json`'s `run`."""
    start = sum(s for label, s in run["stage_seconds"].items() if label.startswith(START_STEP))
    return {"start_seconds": start, "after_start_seconds": run["elapsed_seconds"] - start}


def run_floor(work: Path) -> dict[str, Any]:
    """The floor job in a new process: its wall time and its own report."""
    wall, output = _child([sys.executable, "-m", "benchmarks.example", "--floor-job", str(work / "floor")],
                          "the floor job")
    return {"wall_seconds": wall, **json.loads(output.strip().splitlines()[-1])}


def pairs(count: int, work: Path) -> dict[str, Any]:
    """An untimed run of each, then `count` pairs in turn; the medians and the pairwise ratios of
    the time after Spark's start and of the wall time."""
    run_example(work)
    run_floor(work)
    rounds = []
    for i in range(count):
        example, floor = run_example(work), run_floor(work)
        rounds.append({"example": example, "floor": floor})
        print(f"pair {i + 1}: example {example['after_start_seconds']:.2f} s after Spark's "
              f"{example['start_seconds']:.2f} s start, floor job {floor['after_start_seconds']:.2f} s "
              f"after {floor['start_seconds']:.2f} s", flush=True)

    def ratios(key: str) -> list[float]:
        return [r["example"][key] / r["floor"][key] for r in rounds]

    def median(side: str, key: str) -> float:
        return statistics.median(r[side][key] for r in rounds)

    after, wall = ratios("after_start_seconds"), ratios("wall_seconds")
    return {
        "pairs": rounds,
        "example_after_start_median": median("example", "after_start_seconds"),
        "floor_after_start_median": median("floor", "after_start_seconds"),
        "after_start_ratio_median": statistics.median(after),
        "after_start_ratio_range": [min(after), max(after)],
        "wall_ratio_median": statistics.median(wall), "wall_ratio_range": [min(wall), max(wall)],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.example", description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=int, default=6, help="pairs of runs in turn (default 6)")
    p.add_argument("--out", type=Path, help="write the results as JSON here")
    p.add_argument("--floor-job", type=Path, help=argparse.SUPPRESS)  # one floor job, in this process
    args = p.parse_args(argv)
    if args.floor_job is not None:
        print(json.dumps(floor_job(args.floor_job)))
        return 0
    if args.pairs < 1:
        p.error(f"--pairs={args.pairs}: must be at least 1")
    load = load_average()
    with tempfile.TemporaryDirectory(prefix="quotaplane-example-bench-") as tmp:
        result = pairs(args.pairs, Path(tmp))
    result = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "load_average_at_start": load,
              "machine": describe(), **result}
    low, high = result["after_start_ratio_range"]
    print(f"example {result['example_after_start_median']:.2f} s after Spark's start, floor job "
          f"{result['floor_after_start_median']:.2f} s: pairwise ratio "
          f"{result['after_start_ratio_median']:.2f} ({low:.2f}-{high:.2f}); "
          f"whole processes {result['wall_ratio_median']:.2f}")
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
