"""The bundled example's benchmark on its own input: the floor job's tables and the pairs' sums,
never their timings."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from benchmarks import example
from benchmarks.policies import InputSpec


def groups(path: str, spec: InputSpec, bucket_ms: int) -> int:
    """The (key, time bucket) groups of a JSON Lines input, counted here."""
    seen = set()
    for file in Path(path).glob("*.jsonl"):
        for line in file.read_text().splitlines():
            row = json.loads(line)
            seen.add((*(row[k] for k in spec.keys), math.floor(row[spec.time_col] / bucket_ms)))
    return len(seen)


def test_the_floor_job_writes_each_inputs_groups(spark: object, tmp_path: Path) -> None:
    tables = example.floor_tables(spark, tmp_path)
    inputs, manifest = example.example_inputs()
    assert tables["inputs"] == [spec.kind for spec, _ in inputs] and len(inputs) == 7
    assert tables["expressions"] == "interpreted"  # the example's 21,558 rows: a small run's setting
    written = 0
    for spec, path in inputs:
        rows = ds.dataset(str(tmp_path / spec.kind), format="parquet").count_rows()
        assert rows == groups(path, spec, spec.bucket_ms(manifest)), spec.kind
        written += rows
    assert tables["output_rows"] == written


def test_the_runs_time_after_sparks_start_leaves_the_start_step_out() -> None:
    run = {"elapsed_seconds": 17.5, "stage_seconds": {"starting Spark (local[*])": 2.5, "storage: read": 6.0}}
    assert example.spark_start(run) == {"start_seconds": 2.5, "after_start_seconds": 15.0}


def test_pairs_leave_the_warm_up_out_and_take_pairwise_ratios(monkeypatch, tmp_path: Path) -> None:
    example_after, floor_after = iter([99.0, 12.0, 15.0, 14.0]), iter([99.0, 3.0, 3.0, 2.0])
    monkeypatch.setattr(example, "run_example", lambda work: {
        "wall_seconds": 20.0, "start_seconds": 2.0, "after_start_seconds": next(example_after)})
    monkeypatch.setattr(example, "run_floor", lambda work: {
        "wall_seconds": 5.0, "start_seconds": 2.0, "after_start_seconds": next(floor_after)})
    result = example.pairs(3, tmp_path)
    assert len(result["pairs"]) == 3
    assert result["example_after_start_median"] == 14.0 and result["floor_after_start_median"] == 3.0
    assert result["after_start_ratio_median"] == 5.0 and result["after_start_ratio_range"] == [4.0, 7.0]
    assert result["wall_ratio_median"] == 4.0


def test_a_failed_run_stops_the_benchmark_with_its_error(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(
        a, 2, "", "error: telemetry: is not a directory\n"))
    with pytest.raises(SystemExit, match="quotaplane run failed \\(exit 2\\):\nerror: telemetry"):
        example.run_example(tmp_path)
    with pytest.raises(SystemExit, match="the floor job failed \\(exit 2\\)"):
        example.run_floor(tmp_path)


def test_pairs_must_be_at_least_one() -> None:
    with pytest.raises(SystemExit):
        example.main(["--pairs", "0"])
