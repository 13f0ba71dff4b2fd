"""`write_parquet`: every table written with its column dictionaries capped."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from quotaplane.core.spark.tables import DICTIONARY_PAGE_BYTES, write_parquet

pytestmark = pytest.mark.spark

# names of 43 bytes in the dictionary (a 4-byte length and 39 characters), each in 10 rows in a
# row: twice the cap in all, within Parquet's default 1 MiB, and few enough per page to keep it
NAME_BYTES = 43
DISTINCT = 2 * DICTIONARY_PAGE_BYTES // NAME_BYTES


def _encodings(folder: Path) -> dict[str, set[str]]:
    """Per column of the one file written: the encodings of its chunk."""
    (file,) = folder.glob("*.parquet")
    chunk = pq.ParquetFile(file).metadata.row_group(0)
    return {chunk.column(i).path_in_schema: set(chunk.column(i).encodings) for i in range(chunk.num_columns)}


def test_a_dictionary_past_the_cap_gives_way_to_plain_values(spark, tmp_path: Path) -> None:
    assert 2 * DICTIONARY_PAGE_BYTES < 2**20
    rows = spark.range(10 * DISTINCT).select(
        F.format_string("client-%032d", (F.col("id") / 10).cast("long")).alias("name"),
        F.when(F.col("id") % 3 == 0, "produce").otherwise("fetch").alias("kind")).coalesce(1)
    rows.write.parquet(str(tmp_path / "default"))
    write_parquet(rows, tmp_path / "capped")
    default, capped = _encodings(tmp_path / "default"), _encodings(tmp_path / "capped")
    assert "PLAIN" not in default["name"] and "PLAIN" in capped["name"]
    assert "PLAIN" not in capped["kind"]
    assert sorted(spark.read.parquet(str(tmp_path / "capped")).collect()) == sorted(rows.collect())


def test_overwrites_and_partitions(spark, tmp_path: Path) -> None:
    target = tmp_path / "t"
    write_parquet(spark.createDataFrame([(1, "a")], "n long, record string"), target)
    write_parquet(spark.createDataFrame([(2, "a"), (3, "b")], "n long, record string"), target,
                  partition_by=["record"])
    assert sorted(p.name for p in target.glob("record=*")) == ["record=a", "record=b"]
    assert sorted(r.n for r in spark.read.parquet(str(target)).collect()) == [2, 3]
