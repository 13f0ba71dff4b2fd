"""`write_parquet`: every table written with its column dictionaries capped at 64 KiB."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from quotaplane.core.spark.tables import DICTIONARY_PAGE_BYTES, write_parquet

pytestmark = pytest.mark.spark

# 10,000 distinct longs: a dictionary of 80,000 bytes, beyond the cap; Parquet's defaults keep it
DISTINCT = 10_000


def _dictionaries(folder: Path) -> dict[str, bool]:
    """Per column of the one file written: whether its chunk has a dictionary page."""
    (file,) = folder.glob("*.parquet")
    chunk = pq.ParquetFile(file).metadata.row_group(0)
    return {chunk.column(i).path_in_schema: chunk.column(i).has_dictionary_page
            for i in range(chunk.num_columns)}


def test_a_dictionary_beyond_the_cap_is_left_for_plain_values(spark, tmp_path: Path) -> None:
    assert DICTIONARY_PAGE_BYTES < DISTINCT * 8
    rows = spark.range(10 * DISTINCT).select(
        (F.col("id") % DISTINCT).alias("many"),
        F.when(F.col("id") % 3 == 0, "produce").otherwise("fetch").alias("kind")).coalesce(1)
    rows.write.parquet(str(tmp_path / "default"))
    write_parquet(rows, tmp_path / "capped")
    assert _dictionaries(tmp_path / "default") == {"many": True, "kind": True}
    assert _dictionaries(tmp_path / "capped") == {"many": False, "kind": True}
    assert sorted(spark.read.parquet(str(tmp_path / "capped")).collect()) == sorted(rows.collect())


def test_overwrites_and_partitions(spark, tmp_path: Path) -> None:
    target = tmp_path / "t"
    write_parquet(spark.createDataFrame([(1, "a")], "n long, record string"), target)
    write_parquet(spark.createDataFrame([(2, "a"), (3, "b")], "n long, record string"), target,
                  partition_by=["record"])
    assert sorted(p.name for p in target.glob("record=*")) == ["record=a", "record=b"]
    assert sorted(r.n for r in spark.read.parquet(str(target)).collect()) == [2, 3]
