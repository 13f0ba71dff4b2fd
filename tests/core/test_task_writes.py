"""`write_from_tasks`: a `mapInArrow` call's rows written by its tasks with pyarrow, as Spark's writer
would write them (types, codec, timestamps), committed a task's file at a time."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from quotaplane.core.spark.tables import DICTIONARY_PAGE_BYTES
from quotaplane.core.spark.task_writes import arrow_parquet_options, write_from_tasks
from tests.support.fake_spark import FakeSpark

pytestmark = pytest.mark.spark

SCHEMA = T.StructType([
    T.StructField("id", T.LongType(), False), T.StructField("name", T.StringType(), True),
    T.StructField("share", T.DoubleType(), True), T.StructField("level", T.IntegerType(), True),
    T.StructField("kept", T.BooleanType(), False)])


def _decided(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Each row of `id` decided in slices of 10 rows (a row of id 7 has no name)."""
    for batch in batches:
        ids = batch.column("id")
        for start in range(0, batch.num_rows, 10):
            part = ids.slice(start, 10).to_pylist()
            yield pa.RecordBatch.from_pylist(
                [{"id": i, "name": None if i == 7 else f"client-{i % 3}", "share": i / 4, "level": i % 5,
                  "kept": i % 2 == 0} for i in part], schema=pa.schema(
                    [pa.field(f.name, t, f.nullable) for f, t in zip(SCHEMA, (
                        pa.int64(), pa.string(), pa.float64(), pa.int32(), pa.bool_()), strict=True)]))


def _ids(spark: SparkSession, n: int, partitions: int) -> DataFrame:
    return spark.range(n, numPartitions=1).repartition(partitions, "id")


def _files(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir())


def test_the_tasks_write_what_spark_would(spark, tmp_path: Path) -> None:
    rows = _ids(spark, 95, 4)
    write_from_tasks(rows, _decided, SCHEMA, tmp_path / "tasks")
    rows.mapInArrow(_decided, SCHEMA).write.parquet(str(tmp_path / "spark"))
    got, expected = (spark.read.parquet(str(tmp_path / name)) for name in ("tasks", "spark"))
    assert got.schema == expected.schema  # types and names as Spark's writer gives them
    assert sorted(got.collect()) == sorted(expected.collect())
    names = _files(tmp_path / "tasks")
    assert names[0] == "_SUCCESS"
    assert all(n.startswith("part-") and n.endswith(".parquet") for n in names[1:])
    # a file per task with rows, named by its partition
    partitions = {int(n[5:10]) for n in names[1:]}
    assert len(partitions) == len(names) - 1 and partitions <= set(range(4))
    chunk = pq.ParquetFile(tmp_path / "tasks" / names[1]).metadata.row_group(0).column(1)
    assert chunk.compression == "SNAPPY"  # Spark's default codec


def test_an_empty_partition_writes_no_file_and_no_rows_one_with_the_schema(spark, tmp_path: Path) -> None:
    write_from_tasks(_ids(spark, 1, 3), _decided, SCHEMA, tmp_path / "one")
    assert len(_files(tmp_path / "one")) == 2  # the one task with a row, and _SUCCESS
    write_from_tasks(_ids(spark, 0, 3), _decided, SCHEMA, tmp_path / "none")
    assert _files(tmp_path / "none") == ["_SUCCESS", "part-00000.parquet"]
    empty = spark.read.parquet(str(tmp_path / "none"))  # the schema inferred from the file
    assert empty.count() == 0
    assert [(f.name, f.dataType) for f in empty.schema] == [(f.name, f.dataType) for f in SCHEMA]


def test_replaces_what_is_there(spark, tmp_path: Path) -> None:
    target = tmp_path / "t"
    write_from_tasks(_ids(spark, 40, 4), _decided, SCHEMA, target)
    write_from_tasks(_ids(spark, 3, 1), _decided, SCHEMA, target)
    assert sorted(r.id for r in spark.read.parquet(str(target)).collect()) == [0, 1, 2]


def test_row_groups_hold_up_to_the_rows_asked(spark, tmp_path: Path) -> None:
    write_from_tasks(_ids(spark, 100, 1), _decided, SCHEMA, tmp_path / "t", row_group_rows=25)
    (file,) = (tmp_path / "t").glob("part-*")
    meta = pq.ParquetFile(file).metadata
    sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert sum(sizes) == 100 and max(sizes) == 25 and len(sizes) >= 4


def test_a_failed_task_leaves_no_file(spark, tmp_path: Path) -> None:
    def failing(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        produced = _decided(batches)
        yield next(produced)
        raise ValueError("the policy refused a row")

    with pytest.raises(Exception, match="the policy refused a row"):
        write_from_tasks(_ids(spark, 30, 1), failing, SCHEMA, tmp_path / "t", row_group_rows=5)
    assert _files(tmp_path / "t") == []  # neither a renamed file nor a hidden one


def _column(folder: Path, index: int) -> tuple[str, object, str]:
    """Physical type, logical type and codec of a column of a table's first file."""
    (file,) = [p for p in folder.glob("part-*") if pq.ParquetFile(p).metadata.num_rows]
    parquet = pq.ParquetFile(file)
    column = parquet.schema.column(index)
    logical = json.loads(column.logical_type.to_json()) if column.logical_type.type != "NONE" else None
    return column.physical_type, logical, parquet.metadata.row_group(0).column(index).compression


@pytest.mark.parametrize("kind", ["INT96", "TIMESTAMP_MICROS", "TIMESTAMP_MILLIS"])
def test_timestamps_and_codec_as_the_session_writes_them(spark, tmp_path: Path, kind: str) -> None:
    schema = T.StructType([T.StructField("id", T.LongType()), T.StructField("at", T.TimestampType())])

    def stamped(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            micros = pc.multiply(batch.column("id"), 1_000_001)  # sub-millisecond parts
            yield pa.RecordBatch.from_arrays([batch.column("id"), micros.cast(pa.timestamp("us", tz="UTC"))],
                                             names=["id", "at"])

    rows = _ids(spark, 5, 1)
    spark.conf.set("spark.sql.parquet.outputTimestampType", kind)
    spark.conf.set("spark.sql.parquet.compression.codec", "zstd")
    try:
        write_from_tasks(rows, stamped, schema, tmp_path / "tasks")
        rows.mapInArrow(stamped, schema).write.parquet(str(tmp_path / "spark"))
    finally:
        spark.conf.unset("spark.sql.parquet.outputTimestampType")
        spark.conf.unset("spark.sql.parquet.compression.codec")
    got, expected = _column(tmp_path / "tasks", 1), _column(tmp_path / "spark", 1)
    assert got == expected and got[2] == "ZSTD"
    assert got[0] == ("INT96" if kind == "INT96" else "INT64")
    assert sorted(spark.read.parquet(str(tmp_path / "tasks")).collect()) == \
        sorted(spark.read.parquet(str(tmp_path / "spark")).collect())


def test_a_codec_pyarrow_cannot_write_leaves_the_table_to_spark(spark, tmp_path: Path) -> None:
    assert arrow_parquet_options(FakeSpark(**{"spark.sql.parquet.compression.codec": "lzo"})) is None
    spark.conf.set("spark.sql.parquet.compression.codec", "lz4")  # Hadoop's framing
    try:
        write_from_tasks(_ids(spark, 20, 2), _decided, SCHEMA, tmp_path / "t")
    finally:
        spark.conf.unset("spark.sql.parquet.compression.codec")
    names = _files(tmp_path / "t")
    assert any(n.endswith(".lz4hadoop.parquet") for n in names)  # named by Spark's writer
    assert sorted(r.id for r in spark.read.parquet(str(tmp_path / "t")).collect()) == list(range(20))


def test_the_options_follow_the_session() -> None:
    assert arrow_parquet_options(FakeSpark()) == {
        "compression": "snappy", "dictionary_pagesize_limit": DICTIONARY_PAGE_BYTES,
        "use_deprecated_int96_timestamps": True}
    codec, timestamps = "spark.sql.parquet.compression.codec", "spark.sql.parquet.outputTimestampType"
    options = arrow_parquet_options(FakeSpark(**{codec: "UNCOMPRESSED", timestamps: "timestamp_micros"}))
    assert options is not None and options["compression"] == "none" and options["coerce_timestamps"] == "us"
    options = arrow_parquet_options(FakeSpark(**{codec: "lz4_raw"}))
    assert options is not None and options["compression"] == "lz4"
