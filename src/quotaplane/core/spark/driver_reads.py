"""A small run's JSON Lines inputs read and checked in the driver, handed to Spark as Arrow.

Checking a line in Spark builds and plans a query of some hundred expressions per input, and its
first scans in a new JVM cost seconds whatever the input's size; the reference engines' reader
checks the bundled example's 21,558 lines in a fifth of a second. So a small run (fewer rows than
the interpreted-expressions line, counted in local files: `quotaplane.core.spark.expressions`)
reads each JSON Lines input in the driver with the reference engines' reader and rules
(`quotaplane.core.fields.parse_line`, `RecordSchema.coerce_record`, the rules
tests/core/test_field_rules.py holds both readers to) and hands Spark its typed rows as one Arrow
table (`ReadResult.local`: counted and aggregated here, with no Spark job).

Only a clean input is read so: one whose every line is used. An input with a line to quarantine is
read by Spark as any other (`readers.read_telemetry`), whose reasons name the field's value as
Spark prints it; so is an input of another format, a compressed file or a glob, and, when the
rows' positions are asked for, an input of several files (`FILE_ID` is a hash of the file's URI
as Hadoop writes it; with one file, any constant orders the rows alike).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from quotaplane.core.errors import InputError
from quotaplane.core.fields import parse_line
from quotaplane.core.jsonl import read_lines
from quotaplane.core.policy import StageContext
from quotaplane.core.records import RecordSchema
from quotaplane.core.spark.readers import (
    FILE_ID,
    POSITION,
    REASON,
    ReadResult,
    detect_format,
    hidden_files,
    read_telemetry,
)
from quotaplane.core.spark.schemas import spark_type
from quotaplane.core.telemetry_files import COMPRESSED_SUFFIXES, input_files


def read_input(spark: SparkSession, schema: RecordSchema, path: str, *, in_driver: bool,
               position: bool = False) -> ReadResult:
    """The input at `path` read and checked: in the driver when `in_driver` and it can be
    (`read_in_driver`), else by Spark (`read_telemetry`)."""
    if in_driver:
        local = read_in_driver(spark, schema, path, position)
        if local is not None:
            return local
    return read_telemetry(spark, schema, path, position=position)


def read_run_input(ctx: StageContext, schema: RecordSchema, path: str, position: bool = False) -> ReadResult:
    """An input of the run, read as the run reads its inputs: in the driver when it is a small run
    (`ctx.reads_in_driver`) and the input can be (`read_input`)."""
    return read_input(ctx.spark, schema, path, in_driver=ctx.reads_in_driver, position=position)


def read_in_driver(spark: SparkSession, schema: RecordSchema, path: str,
                   position: bool = False) -> ReadResult | None:
    """The input at `path` as `read_telemetry` checks it, its rows read here (module docstring);
    None when it is not a clean JSON Lines input of local files (Spark then reads it)."""
    files = _json_lines_files(path)
    if files is None or (position and len(files) > 1):
        return None
    typed: list[dict[str, Any]] = []
    texts: list[str] = []
    positions: list[int] = []
    for file in files:
        for number, raw in enumerate(read_lines(file)):
            record, reason = parse_line(raw)
            if reason is not None:
                return None
            if record is None:  # a blank line: not a row
                continue
            try:
                typed.append(schema.coerce_record(record, f"{file}:{number + 1}"))
            except InputError:
                return None
            texts.append(raw.decode("utf-8"))  # as Spark's line reader gives it (`read_lines`)
            positions.append(number)
    # every field nullable, as Spark's checks give them; the positions never null, as Spark's
    fields = [T.StructField(f.name, spark_type(f)) for f in schema.fields]
    columns: dict[str, list[Any]] = {f.name: [r[f.name] for r in typed] for f in schema.fields}
    fields.append(T.StructField("_row", T.StringType()))
    columns["_row"] = texts
    if position:
        fields += [T.StructField(FILE_ID, T.LongType(), False), T.StructField(POSITION, T.LongType(), False)]
        columns[FILE_ID], columns[POSITION] = [0] * len(typed), positions
    fields.append(T.StructField(REASON, T.StringType()))
    columns[REASON] = [None] * len(typed)
    struct = T.StructType(fields)
    frame = spark.createDataFrame(pa.table(columns, schema=to_arrow_schema(struct)), struct)
    return ReadResult(schema, path, frame, "jsonl", hidden_files(path), local=typed)


def _json_lines_files(path: str) -> list[Path] | None:
    """The files Spark reads at `path` when it reads them as JSON Lines; None when it would not
    (another format), when they are not plain local files, or when `path` is a glob."""
    if any(c in path for c in "*?["):
        return None
    try:
        if detect_format(path) != "jsonl":
            return None
        files = input_files(Path(path))
    except InputError:
        return None
    if any(file.suffix.lower() in COMPRESSED_SUFFIXES for file in files):
        return None
    return files
