"""`write_parquet`: every table written with its column dictionaries capped; `read_written`: read back
as written, without a job inferring the schema."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from quotaplane.core.spark.tables import DICTIONARY_PAGE_BYTES, read_written, write_parquet

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


_NESTED = T.StructType([
    T.StructField("n", T.LongType(), False),
    T.StructField("name", T.StringType(), False),
    T.StructField("at", T.StructType([T.StructField("ts", T.LongType(), False),
                                      T.StructField("tags", T.ArrayType(T.StringType(), False), False)]),
                  False),
    T.StructField("by", T.MapType(T.StringType(), T.LongType(), False), False)])


def _jobs_of(spark: SparkSession, group: str, action) -> tuple[object, int]:
    """`action()`'s result and the Spark jobs it ran."""
    sc = spark.sparkContext
    sc.setJobGroup(group, group)
    try:
        result = action()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    return result, len(sc.statusTracker().getJobIdsForGroup(group))


def test_read_written_is_what_inference_reads_without_its_job(spark, tmp_path: Path) -> None:
    written = spark.createDataFrame([(1, "a", (10, ["x"]), {"k": 2}), (2, "b", (20, []), {})], _NESTED)
    assert not written.schema["at"].nullable  # the schema given is stricter than what is read
    path = tmp_path / "t"
    write_parquet(written, path)
    inferred, inference_jobs = _jobs_of(spark, "inferred", lambda: spark.read.parquet(str(path)))
    read, read_jobs = _jobs_of(spark, "read-written", lambda: read_written(spark, path, written.schema))
    assert (inference_jobs, read_jobs) == (1, 0)
    assert read.schema == inferred.schema
    assert sorted(read.collect()) == sorted(inferred.collect()) == sorted(written.collect())


def test_read_written_reads_an_empty_table(spark, tmp_path: Path) -> None:
    empty = spark.createDataFrame([], _NESTED)
    write_parquet(empty.where(F.col("n") > 0), tmp_path / "empty")
    read = read_written(spark, tmp_path / "empty", empty.schema)
    assert read.count() == 0
    assert read.columns == empty.columns
