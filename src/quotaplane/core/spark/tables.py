"""Every table of a run written as Parquet in one way (docs/performance.md, "Column dictionaries
capped").

Parquet's writer (parquet-java's `DictionaryValuesWriter`) first encodes each column of a row
group with a dictionary. It falls back to plain values when the dictionary passes
`parquet.dictionary.page.size` (1 MiB by default), or at the first page when the dictionary does
not make it smaller, and then writes every value taken so far again. A column of times, rates or
byte counts is thus hashed into a dictionary that is thrown away. A cap of 256 KiB gives up four
times sooner, while names, types and other columns of few distinct values keep their dictionary
(some 6,000 names of 40 characters fit): the files keep their size. A cap of 64 KiB wrote no
faster and lost the dictionaries of thousands of client ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

DICTIONARY_PAGE_BYTES = 256 * 1024


def write_parquet(df: DataFrame, path: Path | str, partition_by: Sequence[str] = ()) -> None:
    """Write `df` to `path` as Parquet, replacing what is there (`partition_by`: one folder per
    value of those columns)."""
    writer = (df.write.mode("overwrite")
              .option("parquet.dictionary.page.size", str(DICTIONARY_PAGE_BYTES)))
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.parquet(str(path))


def read_written(spark: SparkSession, path: Path | str, schema: StructType) -> DataFrame:
    """A table this run wrote (`write_parquet`, `task_writes.write_from_tasks`), read back with the
    `schema` it was written with: no Spark job reads its files' footers to infer it (one job per
    read, 0.03-0.08 s on a small table). A file source makes every column of the schema nullable,
    as inference reads a table Spark wrote."""
    return spark.read.schema(schema).parquet(str(path))
