"""Tables written by the Python tasks that make their rows (docs/performance.md, "The client quotas'
decisions written by the tasks that decide them").

A stage whose rows come out of a `mapInArrow` call holds them as Arrow in its Python workers. Handed
back to Spark, every value is turned into Spark's rows and written again by parquet-java's writer:
for the client quotas' 15.9 M decisions of 22 columns at M 8×, 19 s of a 47 s job.
`write_from_tasks` has each task write its own rows with pyarrow instead, in the Parquet types and
codec the session gives Spark's writer (`arrow_parquet_options`), and answer only how many it wrote.

The files are committed as Spark's are, a task's file at a time: a task writes its partition's rows
to a hidden file (`.part-…`, which readers skip) and renames it to `part-<partition>.parquet` when
they are all written. A retried or speculative attempt writes the same rows under the same name; a
failed one leaves only its hidden file, removed when the job is done. A table without rows is one
file with the schema, so that a reader can infer it; `_SUCCESS` marks a finished table.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark import TaskContext
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from quotaplane.core.spark.tables import DICTIONARY_PAGE_BYTES, write_parquet

Batches = Iterator[pa.RecordBatch]
MapFunction = Callable[[Batches], Batches]

#: rows of a row group (pyarrow's default); a task writes its rows as they come, a row group at a time
ROW_GROUP_ROWS = 1 << 20
#: `spark.sql.parquet.compression.codec` as pyarrow's codec (Spark's `lz4` is Hadoop's framing;
#: pyarrow writes the raw format, which Spark reads as `lz4_raw`)
_CODECS = {"none": "none", "uncompressed": "none", "snappy": "snappy", "gzip": "gzip",
           "brotli": "brotli", "zstd": "zstd", "lz4_raw": "lz4"}
#: `spark.sql.parquet.outputTimestampType` as pyarrow's writer options
_TIMESTAMPS = {"INT96": {"use_deprecated_int96_timestamps": True},
               "TIMESTAMP_MICROS": {"coerce_timestamps": "us"},
               "TIMESTAMP_MILLIS": {"coerce_timestamps": "ms", "allow_truncated_timestamps": True}}
_WRITTEN = "partition int, rows long"


def arrow_parquet_options(spark: Any) -> dict[str, Any] | None:
    """pyarrow's `write_table` options for a table as Spark's writer writes it in this session
    (codec, timestamp type, the dictionary cap of `tables`); None when pyarrow cannot write the
    session's codec (`lzo`, Hadoop's `lz4`), which leaves the table to Spark's writer."""
    codec = _CODECS.get(spark.conf.get("spark.sql.parquet.compression.codec", "snappy").lower())
    if codec is None:
        return None
    kind = spark.conf.get("spark.sql.parquet.outputTimestampType", "INT96").upper()
    return {"compression": codec, "dictionary_pagesize_limit": DICTIONARY_PAGE_BYTES,
            **_TIMESTAMPS.get(kind, _TIMESTAMPS["INT96"])}


def write_from_tasks(rows: DataFrame, fn: MapFunction, schema: StructType, path: Path,
                     row_group_rows: int = ROW_GROUP_ROWS) -> None:
    """Write `rows.mapInArrow(fn, schema)` to `path` as Parquet, replacing what is there: each task
    its own rows with pyarrow (module docstring) in row groups of up to `row_group_rows`, or Spark's
    writer when pyarrow cannot write the session's codec. One job either way."""
    options = arrow_parquet_options(rows.sparkSession)
    if options is None:
        write_parquet(rows.mapInArrow(fn, schema), path)
        return
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    written = rows.mapInArrow(_TaskWrite(fn, str(path), options, row_group_rows), _WRITTEN).collect()
    for hidden in path.glob(".part-*"):  # a failed attempt's
        hidden.unlink(missing_ok=True)
    if not any(r["rows"] for r in written):
        pq.write_table(to_arrow_schema(schema).empty_table(), path / "part-00000.parquet", **options)
    (path / "_SUCCESS").touch()


class _TaskWrite:
    """The task's function: `fn`'s batches written to the task's file, its row count answered."""

    def __init__(self, fn: MapFunction, folder: str, options: dict[str, Any], row_group_rows: int) -> None:
        self.fn, self.folder, self.options, self.row_group_rows = fn, folder, options, row_group_rows

    def __call__(self, batches: Batches) -> Batches:
        context = TaskContext.get()
        assert context is not None, "runs in a Spark task"
        partition = context.partitionId()
        name = f"part-{partition:05d}.parquet"
        hidden = os.path.join(self.folder, f".{name}.{context.taskAttemptId()}")
        writer: pq.ParquetWriter | None = None
        pending: list[pa.RecordBatch] = []
        rows = held = 0
        try:
            for batch in self.fn(batches):
                if not batch.num_rows:
                    continue
                pending.append(batch)
                held += batch.num_rows
                if held >= self.row_group_rows:
                    writer = self._flush(writer, hidden, pending)
                    rows, held, pending = rows + held, 0, []
            if pending:
                writer = self._flush(writer, hidden, pending)
                rows += held
        except BaseException:
            if writer is not None:
                writer.close()
            if os.path.exists(hidden):
                os.unlink(hidden)
            raise
        if writer is not None:
            writer.close()
            os.replace(hidden, os.path.join(self.folder, name))
        yield pa.RecordBatch.from_arrays([pa.array([partition], pa.int32()), pa.array([rows], pa.int64())],
                                         names=["partition", "rows"])

    def _flush(self, writer: pq.ParquetWriter | None, hidden: str,
               pending: list[pa.RecordBatch]) -> pq.ParquetWriter:
        table = pa.Table.from_batches(pending)
        if writer is None:
            writer = pq.ParquetWriter(hidden, table.schema, **self.options)
        writer.write_table(table, row_group_size=self.row_group_rows)
        return writer
