"""The main job on a real Spark cluster: a standalone master with two workers, and Spark Connect.

Both clusters run on loopback from the installed pyspark. The decisions they write must equal the
embedded local run's, table by table, row by row. The local run keeps Spark's generated code
(`spark.quotaplane.interpretedBelowRows=0`) where the cluster runs, as small runs, evaluate their
expressions interpreted and take their stages side by side: the comparison checks that those decide
alike too.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from quotaplane.core.runner import run_pipeline
from quotaplane.core.spark.expressions import THRESHOLD
from quotaplane.registry import POLICIES
from quotaplane.run_command import bundled_example
from tests.support.cluster import _master_address, start_connect_server, start_standalone
from tests.support.cluster_check import decision_tables, differences, main, run_cli

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def local_run(spark, tmp_path_factory: pytest.TempPathFactory) -> dict[str, pd.DataFrame]:
    telemetry, configs = bundled_example()
    out = tmp_path_factory.mktemp("local")
    spark.conf.set(THRESHOLD, "0")
    try:
        outcome = run_pipeline(telemetry, configs, out, POLICIES, stream=None, spark=spark)
    finally:
        spark.conf.unset(THRESHOLD)
    assert outcome.summary["run"]["spark_expressions"]["mode"] == "generated"  # type: ignore[index]
    assert outcome.summary["run"]["stages"]["mode"] == "one after another"  # type: ignore[index]
    assert {i["reader"] for i in outcome.summary["inputs"]} == {"spark"}  # type: ignore[union-attr]
    tables = decision_tables(out)
    assert tables, "the local run wrote no decision tables"
    return tables


def assert_same_tables(expected: dict[str, pd.DataFrame], out: Path, jit: str,
                       partitions: int | None) -> None:
    """The cluster's run, a small one, took its stages side by side (`jit`: its driver's compilers;
    `partitions`: its shuffles', None where it could not see the cluster's task slots)."""
    assert differences(expected, decision_tables(out)) == []
    run = json.loads((out / "summary.json").read_text())["run"]
    assert run["spark_expressions"]["mode"] == "interpreted"
    assert run["stages"]["mode"] == "side by side"
    assert run["stages"].get("shuffle_partitions") == partitions
    assert run["driver_jit"]["mode"] == jit
    # the example's inputs are clean JSON Lines: each read in the driver
    inputs = json.loads((out / "summary.json").read_text())["inputs"]
    assert run["input_reads"]["mode"] == "in the driver" and {i["reader"] for i in inputs} == {"driver"}


def test_standalone_cluster_with_two_workers_decides_like_local(local_run, tmp_path: Path) -> None:
    with start_standalone(workers=2, cores=1, memory="1g", work_dir=tmp_path / "cluster") as cluster:
        run_cli(tmp_path / "out", "--master", cluster.url)
    assert_same_tables(local_run, tmp_path / "out", "C1 only", 2)  # two workers of one core


def test_spark_connect_decides_like_local(local_run, tmp_path: Path) -> None:
    with start_connect_server(work_dir=tmp_path / "connect") as server:
        run_cli(tmp_path / "out", "--remote", server.url)
    assert_same_tables(local_run, tmp_path / "out", "not chosen", None)


def test_differences_name_the_tables_that_differ() -> None:
    a = {"t": pd.DataFrame({"x": [1, 2]}), "only_local": pd.DataFrame({"x": [1]})}
    b = {"t": pd.DataFrame({"x": [1, 3]}), "only_cluster": pd.DataFrame({"x": [1]})}
    lines = differences(a, b)
    assert lines[:2] == ["only_local: only in the local run", "only_cluster: only in the cluster run"]
    assert len(lines) == 3 and lines[2].startswith("t: ")
    assert differences(a, dict(a)) == []


def test_the_check_script_reports_a_failing_run(monkeypatch, capsys) -> None:
    def fail(out: Path, *flags: str) -> None:
        raise RuntimeError("quotaplane run failed (exit 2):\nboom")

    monkeypatch.setattr("tests.support.cluster_check.run_cli", fail)
    assert main(["standalone"]) == 2
    assert "boom" in capsys.readouterr().err


def test_the_workers_are_given_the_address_the_master_bound(tmp_path: Path) -> None:
    # the master binds ports of its own choosing (port 0) and logs them: a port picked before it
    # starts can be taken meanwhile, and it would move to the next while the workers knock at the first
    log = tmp_path / "master.log"
    log.write_text("INFO Master: Starting Spark master at spark://127.0.0.1:40444\n"
                   "INFO MasterWebUI: Bound MasterWebUI to 127.0.0.1, and started at http://localhost:40221\n")
    up = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert _master_address(up, log, time.monotonic() + 10) == ("spark://127.0.0.1:40444", 40221)
    finally:
        up.kill()
        up.wait()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    log.write_text("INFO Master: Starting Spark master at spark://127.0.0.1:40444\n")
    with pytest.raises(RuntimeError, match="the Spark master did not start"):
        _master_address(gone, log, time.monotonic() + 10)
