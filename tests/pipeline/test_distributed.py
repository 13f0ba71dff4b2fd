"""The main job on a real Spark cluster: a standalone master with two workers, and Spark Connect.

Both clusters run on loopback from the installed pyspark. The decisions they write must equal the
embedded local run's, table by table, row by row.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from quotaplane.pipeline.run import bundled_example, run_pipeline
from quotaplane.pipeline.standalone import start_connect_server, start_standalone

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def decision_tables(out: Path) -> dict[str, pd.DataFrame]:
    """Every Parquet table a run wrote (not the quarantine), rows in a canonical order."""
    tables = {}
    for folder in sorted(p for p in out.iterdir() if p.is_dir() and p.name != "quarantine"):
        frame = pq.read_table(folder).to_pandas()
        frame = frame.reindex(sorted(frame.columns), axis=1)
        keys = [c for c in frame.columns if frame[c].map(lambda v: not isinstance(v, list | dict)).all()]
        tables[folder.name] = frame.sort_values(keys).reset_index(drop=True)
    return tables


@pytest.fixture(scope="module")
def local_run(spark, tmp_path_factory: pytest.TempPathFactory) -> dict[str, pd.DataFrame]:
    telemetry, configs = bundled_example()
    out = tmp_path_factory.mktemp("local")
    run_pipeline(telemetry, configs, out, stream=None, spark=spark)
    tables = decision_tables(out)
    assert tables, "the local run wrote no decision tables"
    return tables


def run_cli(flag: str, url: str, out: Path) -> None:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.run(
        [sys.executable, "-m", "quotaplane.cli", "run", flag, url, "--out", str(out), "--quiet"],
        capture_output=True, text=True, env=env, timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "report:" in proc.stdout


def assert_same_tables(expected: dict[str, pd.DataFrame], out: Path) -> None:
    got = decision_tables(out)
    assert sorted(got) == sorted(expected)
    for name, frame in expected.items():
        pd.testing.assert_frame_equal(got[name], frame, check_dtype=False, obj=name)


def test_standalone_cluster_with_two_workers_decides_like_local(local_run, tmp_path: Path) -> None:
    with start_standalone(workers=2, cores=1, memory="1g", work_dir=tmp_path / "cluster") as cluster:
        run_cli("--master", cluster.url, tmp_path / "out")
    assert_same_tables(local_run, tmp_path / "out")


def test_spark_connect_decides_like_local(local_run, tmp_path: Path) -> None:
    with start_connect_server(work_dir=tmp_path / "connect") as server:
        run_cli("--remote", server.url, tmp_path / "out")
    assert_same_tables(local_run, tmp_path / "out")
