"""A file Spark cannot read ends the run with an `InputError` naming the file and Spark's reason,
not a traceback; and the failed step is marked as failed."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from quotaplane.core.errors import InputError
from quotaplane.core.policy import Progress, RunConfigs
from quotaplane.core.runner import run_pipeline
from quotaplane.core.spark.expressions import THRESHOLD
from quotaplane.core.spark.failures import unreadable_file
from quotaplane.storage.policy import StoragePolicy

S = "client.quota.callback.static."


def test_spark_connects_message_without_a_cause_still_names_the_file() -> None:
    failure = RuntimeError("[FAILED_READ_FILE.NO_HINT] Encountered error while reading file "
                           "file:///data/tel/volumes/part%201.parquet. SQLSTATE: KD001")
    error = unreadable_file(failure)
    assert error is not None
    assert (error.where, error.value) == ("/data/tel/volumes/part 1.parquet", "part 1.parquet")
    assert error.rule == "cannot read: Spark could not read it"


def test_other_failures_are_left_alone() -> None:
    assert unreadable_file(RuntimeError("[DIVIDE_BY_ZERO] Division by zero.")) is None


def test_a_failed_step_is_marked_as_failed() -> None:
    stream = io.StringIO()
    progress = Progress(stream)
    with pytest.raises(ValueError), progress.step("a step"):
        raise ValueError("no")
    with progress.step("another"):
        pass
    lines = stream.getvalue().splitlines()
    assert lines[1].startswith("  ✗ a step (") and lines[3].startswith("  ✓ another (")


@pytest.mark.spark
def test_a_run_over_a_file_spark_cannot_read_names_the_file_and_the_reason(spark, tmp_path: Path) -> None:
    volumes = tmp_path / "telemetry" / "volumes"
    volumes.mkdir(parents=True)
    pq.write_table(pa.table({"ts": [1_717_372_800_000], "cluster": ["c"], "broker_id": [1], "log_dir": ["/d"],
                             "total_bytes": [100], "available_bytes": [50]}), volumes / "part-0.parquet")
    (volumes / "part-1.parquet").write_bytes(b"not parquet")
    config = tmp_path / "storage.properties"
    config.write_text(f"{S}storage.volume.source=cluster\n{S}storage.perVolumeLimit.availableBytesBelow.hard=1\n")
    spark.conf.set(THRESHOLD, "0")  # no row count before Spark starts, which would find the file first
    try:
        with pytest.raises(InputError) as raised:
            run_pipeline(tmp_path / "telemetry", RunConfigs(storage=config), tmp_path / "out",
                         [StoragePolicy()], spark=spark, stream=None)
    finally:
        spark.conf.unset(THRESHOLD)
    error = raised.value
    assert error.where == str(volumes / "part-1.parquet") and error.value == "part-1.parquet"
    assert error.rule.startswith("cannot read: ") and "is not a Parquet file" in error.rule
    assert not (tmp_path / "out").exists()
