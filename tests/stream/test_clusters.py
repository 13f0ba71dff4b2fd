"""`quotaplane stream` on a loopback standalone cluster (two workers) and on Spark Connect decides
like the batch run, as `quotaplane run` does there (tests/core/test_distributed.py): with the keys
stepped by the cluster's tasks, and on Spark Connect in the driver (the client) too."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.stream.streams import STEPS, StreamCase, step_conf, step_env, stream_command, stream_tables
from tests.support.cluster import start_connect_server, start_standalone
from tests.support.differential import assert_rows_equal

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _stream_and_compare(spark, case: StreamCase, batch, out: Path, *where: str,
                        env: dict[str, str] | None = None) -> None:
    # every file in one micro-batch, then the flush: the machinery runs on the cluster, the
    # micro-batch after micro-batch behaviour is tested on local Spark
    command = stream_command(case, out, "--until-idle", "2", *where, file_per_batch=False)
    proc = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "flush" in proc.stderr  # the progress display's last line
    tables = stream_tables(spark, out)
    for table, expected in batch.items():
        assert_rows_equal(expected, tables.get(table, []), label=f"{table} ({' '.join(where)})")


def test_the_stream_on_a_standalone_cluster_decides_like_the_batch_run(spark, case, batch, tmp_path) -> None:
    with start_standalone(workers=2, cores=1, memory="1g", work_dir=tmp_path / "cluster") as cluster:
        _stream_and_compare(spark, case, batch, tmp_path / "out", "--master", cluster.url,
                            env=step_env("spark-step"))


@pytest.mark.parametrize("step", STEPS)
def test_the_stream_on_spark_connect_decides_like_the_batch_run(spark, case, batch, step, tmp_path) -> None:
    with start_connect_server(work_dir=tmp_path / "connect", conf=step_conf(step)) as server:
        _stream_and_compare(spark, case, batch, tmp_path / "out", "--remote", server.url)
