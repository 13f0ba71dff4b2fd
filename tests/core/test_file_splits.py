"""A large input file is scanned in several tasks per task slot: its row groups spread over the tasks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from quotaplane.core.spark.session import MIN_FILE_SPLITS, SPLITS_PER_SLOT, split_scans, task_slots
from tests.support.fake_spark import FakeSpark

pytestmark = pytest.mark.spark

ROWS_PER_GROUP = 650_000  # 5.2 MB of random longs: a row group larger than a file's 4 MB opening cost


def test_the_session_splits_scans_into_several_tasks_per_slot(spark) -> None:
    assert spark.conf.get(MIN_FILE_SPLITS) == str(SPLITS_PER_SLOT * task_slots(spark))


def test_three_row_groups_of_one_file_are_read_by_three_tasks(spark, tmp_path: Path) -> None:
    # with one split per slot, two of the row groups went to one task and the third to the other
    values = np.random.default_rng(7).integers(0, 2**62, 3 * ROWS_PER_GROUP)
    path = tmp_path / "three-groups.parquet"
    pq.write_table(pa.table({"v": values}), path, row_group_size=ROWS_PER_GROUP, compression="none")
    assert pq.ParquetFile(path).metadata.num_row_groups == 3
    per_task = (spark.read.parquet(str(path)).groupBy(F.spark_partition_id().alias("task")).count()
                .collect())
    assert sorted(r["count"] for r in per_task) == [ROWS_PER_GROUP] * 3


def test_a_setting_of_the_session_is_kept_and_an_unset_one_given(spark) -> None:
    before = spark.conf.get(MIN_FILE_SPLITS)
    try:
        spark.conf.set(MIN_FILE_SPLITS, "3")
        split_scans(spark)
        assert spark.conf.get(MIN_FILE_SPLITS) == "3"
        spark.conf.unset(MIN_FILE_SPLITS)
        split_scans(spark)
        assert spark.conf.get(MIN_FILE_SPLITS) == str(SPLITS_PER_SLOT * task_slots(spark))
    finally:
        spark.conf.set(MIN_FILE_SPLITS, before)


def test_a_session_that_does_not_see_its_cluster_is_left_as_it_is() -> None:
    fake = FakeSpark()
    split_scans(fake)
    assert fake.conf.get(MIN_FILE_SPLITS, "unset") == "unset"
