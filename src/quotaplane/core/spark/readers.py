"""Reading telemetry into Spark: JSON Lines, CSV or Parquet, a file, a directory or a glob.

Every field is read as text first (JSON Lines, CSV, and Parquet columns of another type than the
field's), so a malformed value is never silently turned into null by the reader; a Parquet column
that already has the field's type is used as it is. Then each row is typed and checked against
its `RecordSchema`: rows that break it go to the quarantine table with the reason and the
original row as JSON, the rest are used. `read == used + quarantined` holds by construction and
is reported per input.
"""

from __future__ import annotations

import glob as globlib
import shutil
from dataclasses import dataclass
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from quotaplane.core.errors import InputError
from quotaplane.core.records import Field, RecordSchema

CORRUPT = "_corrupt_record"
# Why a row is quarantined (null when used); named so as not to clash with a field called `reason`
# (collection_errors has one). The quarantine table exposes it as `reason`.
REASON = "_reason"
FORMATS = ("jsonl", "csv", "parquet")
# Where a row came from (`read_raw(..., position=True)`): its file, and its place in the file.
FILE_ID, POSITION = "_file", "_position"
_SUFFIX_FORMAT = {".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl", ".csv": "csv",
                  ".parquet": "parquet"}


@dataclass
class ReadCounts:
    """How many rows an input had, and where they went."""

    input: str
    read: int
    used: int
    quarantined: int

    def as_dict(self) -> dict[str, object]:
        return {"input": self.input, "read": self.read, "used": self.used,
                "quarantined": self.quarantined}


@dataclass
class ReadResult:
    """A validated input: the typed rows to use, and the quarantined rows with their reasons."""

    schema: RecordSchema
    source: str
    checked: DataFrame  # every row, typed, with `_reason` (REASON; null when the row is used)
    fmt: str = ""  # the input's format, when known

    @property
    def used(self) -> DataFrame:
        return self.checked.where(F.col(REASON).isNull()).select(*self.schema.field_names)

    @property
    def quarantined(self) -> DataFrame:
        """Columns: `input`, `record` (the schema's name), `reason`, `row` (original, as JSON)."""
        return self.checked.where(F.col(REASON).isNotNull()).select(
            F.lit(self.source).alias("input"),
            F.lit(self.schema.name).alias("record"),
            F.col(REASON).alias("reason"),
            F.col("_row").alias("row"),
        )

    def counts(self) -> ReadCounts:
        """Count read/used/quarantined in one Spark action."""
        return _count(self.checked, self.source)


def _count(checked: DataFrame, source: str) -> ReadCounts:
    row = checked.agg(F.count(F.lit(1)).alias("read"),
                      F.count(F.when(F.col(REASON).isNull(), 1)).alias("used")).first()
    read, used = int(row["read"]), int(row["used"])
    return ReadCounts(source, read, used, read - used)


def detect_format(path: str) -> str:
    """The format of `path` from its suffix, or of the files inside a directory."""
    p = Path(path)
    candidates = [p] if not p.is_dir() else sorted(q for q in p.rglob("*") if q.is_file())
    if any(c in path for c in "*?["):
        candidates = [Path(x) for x in sorted(globlib.glob(path))]
    for c in candidates:
        fmt = _SUFFIX_FORMAT.get(c.suffix.lower())
        if fmt:
            return fmt
    raise InputError(path, "format", p.suffix or "(none)",
                     "cannot tell the format: use .jsonl, .json, .csv or .parquet files")


def read_raw(spark: SparkSession, schema: RecordSchema, path: str, fmt: str | None = None,
             position: bool = False) -> DataFrame:
    """Read `path` with every schema field as a string plus `_row` (the original row as JSON).

    A Parquet column whose type already holds the field's values (an integer column for a `long`,
    a timestamp for a `time_ms`, ...) is kept as it is: nothing to parse, nothing lost. With
    `position`, also `FILE_ID` (a hash of the row's file) and `POSITION` (increasing with the row's
    place in its file): Parquet's own row index, which every scan gives again; for text formats an
    id given by the scan, stable only while the scan is the same (`check_once` caches those)."""
    fmt = fmt or detect_format(path)
    raw = schema.raw_schema()
    if fmt == "jsonl":
        with_corrupt = T.StructType([*raw.fields, T.StructField(CORRUPT, T.StringType(), True)])
        df = (spark.read.schema(with_corrupt)
              .option("mode", "PERMISSIVE")
              .option("columnNameOfCorruptRecord", CORRUPT)
              .option("primitivesAsString", "true")
              .option("recursiveFileLookup", "true" if Path(path).is_dir() else "false")
              .json(path))
    elif fmt == "csv":
        with_corrupt = T.StructType([*raw.fields, T.StructField(CORRUPT, T.StringType(), True)])
        df = (spark.read.schema(with_corrupt)
              .option("header", "true")
              .option("mode", "PERMISSIVE")
              .option("columnNameOfCorruptRecord", CORRUPT)
              .option("enforceSchema", "false")
              .csv(path))
    elif fmt == "parquet":
        src = spark.read.parquet(path)
        types = {f.name: f.dataType for f in src.schema.fields}
        where = ([F.xxhash64(F.col("_metadata.file_path")).alias(FILE_ID),
                  F.col("_metadata.row_index").alias(POSITION)] if position else [])
        df = src.select(
            *[_parquet_column(f, types.get(f.name)).alias(f.name) for f in schema.fields],
            F.lit(None).cast("string").alias(CORRUPT), *where,
        )
    else:
        raise InputError(path, "format", fmt, f"must be one of {', '.join(FORMATS)}")
    if position and fmt != "parquet":
        df = df.select("*", F.xxhash64(F.input_file_name()).alias(FILE_ID),
                       F.monotonically_increasing_id().alias(POSITION))
    original = F.coalesce(F.col(CORRUPT), F.to_json(F.struct(*[F.col(n) for n in schema.field_names])))
    return df.withColumn("_row", original)


_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_NATIVE: dict[str, tuple[type[T.DataType], ...]] = {
    "long": _INTEGRAL, "time_ms": (*_INTEGRAL, T.TimestampType),
    # not float: widening it to double would change its decimal value; it is read as text
    "double": (*_INTEGRAL, T.DoubleType), "bool": (T.BooleanType,), "string": (T.StringType,),
}


def _is_native(f: Field, dtype: T.DataType | None) -> bool:
    """Whether a Parquet column of `dtype` holds `f`'s values without any parsing: then it is
    typed directly and only a missing value can be wrong; any other type is checked as text."""
    return dtype is not None and isinstance(dtype, _NATIVE[f.type])


def _parquet_column(f: Field, dtype: T.DataType | None) -> Column:
    if dtype is None:
        return F.lit(None).cast("string")
    return F.col(f.name) if _is_native(f, dtype) else F.col(f.name).cast("string")


def _typed(f: Field, col: Column, dtype: T.DataType) -> Column:
    if not isinstance(dtype, T.StringType):  # a native Parquet column (see `_is_native`)
        if isinstance(dtype, T.TimestampType):
            return F.unix_millis(col)
        return col.cast(f.spark_type)
    text = F.trim(col)
    if f.type == "string":
        return col
    if f.type == "long":
        return text.try_cast("long")
    if f.type == "double":
        return text.try_cast("double")
    if f.type == "bool":
        return F.when(F.lower(text).isin("true", "false"), F.lower(text) == "true")
    # time_ms: epoch milliseconds, or an ISO-8601 timestamp
    iso = F.unix_millis(F.try_to_timestamp(text))
    return F.when(text.rlike(r"^[+-]?\d+$"), text.try_cast("long")).otherwise(iso)


def _type_problem(f: Field, raw: Column, typed: Column, dtype: T.DataType) -> Column:
    expected = {"long": "a whole number", "double": "a number", "string": "a string",
                "bool": "true or false",
                "time_ms": "epoch milliseconds or an ISO-8601 timestamp"}[f.type]
    text = isinstance(dtype, T.StringType)
    missing = raw.isNull() | (F.trim(raw) == "") if f.type != "string" and text else raw.isNull()
    bad = F.lit(None).cast("string") if not text else F.when(
        raw.isNotNull() & typed.isNull(), F.format_string(f"field {f.name}=%s: must be {expected}", raw))
    if f.required:
        return F.when(missing, F.lit(f"field {f.name}: missing required field")).otherwise(bad)
    return F.when(~missing, bad)


def validate(schema: RecordSchema, raw: DataFrame) -> DataFrame:
    """Type the raw columns (text, or native Parquet types) and add `reason`: the first problem of
    the row, or null."""
    dtypes = {f.name: f.dataType for f in raw.schema.fields}
    typed_cols = {f.name: _typed(f, F.col(f.name), dtypes[f.name]) for f in schema.fields}
    problems: list[Column] = [F.when(F.col(CORRUPT).isNotNull(), F.lit("unparsable record"))]
    problems += [_type_problem(f, F.col(f.name), typed_cols[f.name], dtypes[f.name]) for f in schema.fields]
    typed = raw.select(
        *[typed_cols[f.name].alias(f.name) for f in schema.fields],
        F.coalesce(*problems).alias("_type_reason"),
        F.col("_row"),
        *[c for c in (FILE_ID, POSITION) if c in raw.columns],
    )
    cols = {f.name: F.col(f.name) for f in schema.fields}
    rule_reasons = [F.when(rule.violated(cols), F.lit(rule.reason)) for rule in schema.rules]
    reason = F.coalesce(F.col("_type_reason"), *rule_reasons) if rule_reasons else F.col("_type_reason")
    return typed.withColumn(REASON, reason).drop("_type_reason")


def read_telemetry(spark: SparkSession, schema: RecordSchema, path: str,
                   fmt: str | None = None, position: bool = False) -> ReadResult:
    """Read and check one input; see `ReadResult` (and `read_raw` for `position`)."""
    fmt = fmt or detect_format(path)
    return ReadResult(schema, path, validate(schema, read_raw(spark, schema, path, fmt, position)), fmt)


@dataclass
class CheckedInput:
    """An input read, typed and checked once: its counts, and its rows for every later step.

    `rows` holds the schema's fields, `FILE_ID` and `POSITION` if read, and `_reason`; the
    original row text (needed only by the quarantine) is not kept. They are cached when `cached`.
    """

    schema: RecordSchema
    counts: ReadCounts
    rows: DataFrame
    cached: bool

    @property
    def used(self) -> DataFrame:
        """The used rows: the schema's fields (and `FILE_ID`, `POSITION` if read)."""
        return self.rows.where(F.col(REASON).isNull()).drop(REASON)

    def release(self) -> None:
        if self.cached:
            self.rows.unpersist()


def check_once(read: ReadResult, quarantine_dir: Path | None, cache: bool | None = None) -> CheckedInput:
    """Count read/used/quarantined in one scan of `read`, and write the quarantined rows to
    `quarantine_dir` only when there are some (a stale quarantine from an earlier run into the same
    directory is removed). The rows keep `FILE_ID` and `POSITION` when they were read with them.

    With `cache` (by default: unless the input is Parquet) the typed rows are cached by that same
    scan, so later steps do not parse the text again; Parquet is cheaper to scan again than to
    cache (measured in docs/performance.md)."""
    cache = read.fmt != "parquet" if cache is None else cache
    where = [c for c in (FILE_ID, POSITION) if c in read.checked.columns]
    rows = read.checked.select(*read.schema.field_names, *where, REASON)
    if cache:
        rows = rows.persist(StorageLevel.MEMORY_AND_DISK)
    counts = _count(rows, read.source)
    if quarantine_dir is not None:
        if counts.quarantined:
            read.quarantined.write.mode("overwrite").parquet(str(quarantine_dir))
        elif quarantine_dir.exists():
            shutil.rmtree(quarantine_dir)
    return CheckedInput(read.schema, counts, rows, cache)
