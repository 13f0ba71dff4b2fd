"""Reading telemetry into Spark: JSON Lines, CSV or Parquet, a file, a directory or a glob.

JSON Lines are read line by line as text: a line is the unit, checked to be exactly one JSON object
and parsed once (`quotaplane.core.spark.fields`); CSV fields and Parquet columns of another type than
the field's are read as text; a Parquet column that already has the field's type is used as it is.
Every field is then typed and checked with the rules of `quotaplane.core.fields` (the same as the
reference engines' readers) and its `RecordSchema`'s row rules: rows that break them go to the
quarantine table with the reason and the original line, the rest are used. `read == used +
quarantined` holds by construction (`read` counts the non-blank lines of JSON Lines, the records of
CSV, the rows of Parquet) and is reported per input, with the files of an input folder that Spark
does not read (names starting with `_` or `.`) listed as skipped.
"""

from __future__ import annotations

import glob as globlib
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from quotaplane.core.errors import InputError
from quotaplane.core.fields import UNPARSABLE
from quotaplane.core.records import Field, RecordSchema
from quotaplane.core.spark import fields as SF
from quotaplane.core.spark.schemas import raw_schema, spark_type
from quotaplane.core.spark.tables import write_parquet

CORRUPT = "_corrupt_record"
PARSED, LINE_REASON = "_parsed", "_line_reason"
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
    """How many rows an input had, and where they went; `skipped`: files of the input that were
    not read (hidden files, see `hidden_files`); `reader`: who read and checked it, "spark" or
    "driver" (`driver_reads`)."""

    input: str
    read: int
    used: int
    quarantined: int
    skipped: tuple[str, ...] = ()
    reader: str = "spark"

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"input": self.input, "read": self.read, "used": self.used,
                                  "quarantined": self.quarantined, "reader": self.reader}
        if self.skipped:
            out["skipped"] = list(self.skipped)
        return out


def used_row() -> Column:
    """The row has passed every rule checked so far: its `_reason` (REASON) is null."""
    return F.col(REASON).isNull()


@dataclass
class ReadResult:
    """A validated input: the typed rows to use, and the quarantined rows with their reasons."""

    schema: RecordSchema
    source: str
    checked: DataFrame  # every row, typed, with `_reason` (REASON; null when the row is used)
    fmt: str = ""  # the input's format, when known
    skipped: tuple[str, ...] = ()  # files of the input Spark does not read
    # the typed rows when the driver read them, every one used (`driver_reads`); None when Spark reads
    local: list[dict[str, Any]] | None = None

    @property
    def reader(self) -> str:
        """Who read and checked the rows: "driver" or "spark" (`ReadCounts.reader`)."""
        return "spark" if self.local is None else "driver"

    @property
    def used(self) -> DataFrame:
        return self.checked.where(used_row()).select(*self.schema.field_names)

    @property
    def quarantined(self) -> DataFrame:
        """Columns: `input`, `record` (the schema's name), `reason`, `row` (the original line; a CSV
        or Parquet row as JSON; `hex:` and the bytes of a line that is not UTF-8)."""
        return self.checked.where(F.col(REASON).isNotNull()).select(
            F.lit(self.source).alias("input"),
            F.lit(self.schema.name).alias("record"),
            F.col(REASON).alias("reason"),
            F.col("_row").alias("row"),
        )

    def counts(self) -> ReadCounts:
        """Count read/used/quarantined in one Spark action (none when the driver read the rows)."""
        return _count(self.checked, self.source, self.skipped, local=self.local)[0]

    def tally(self, read: int, used: int) -> ReadCounts:
        """The input's counts, given its rows read and used (counted by a job that used them)."""
        return ReadCounts(self.source, read, used, read - used, self.skipped, self.reader)


@dataclass(frozen=True)
class UsedAggregate:
    """An aggregate of an input's used rows taken by its counting scan: the largest (`how` "max")
    or smallest ("min") value of `field`, or with `null`, of whether `field` is null (None without
    used rows)."""

    how: Literal["max", "min"]
    field: str
    null: bool = False

    def column(self) -> Column:
        value = F.col(self.field).isNull() if self.null else F.col(self.field)
        return (F.max if self.how == "max" else F.min)(F.when(used_row(), value))

    def of(self, rows: list[dict[str, Any]]) -> Any:
        """The same over rows the driver read (all used)."""
        values = ((r[self.field] is None) if self.null else r[self.field] for r in rows)
        return (max if self.how == "max" else min)((v for v in values if v is not None), default=None)


def _count(checked: DataFrame, source: str, skipped: tuple[str, ...] = (),
           over_used: Mapping[str, UsedAggregate] | None = None, local: list[dict[str, Any]] | None = None
           ) -> tuple[ReadCounts, dict[str, Any]]:
    """The counts, and each aggregate of `over_used` over the used rows, in one scan; from the
    `local` rows without one."""
    over_used = over_used or {}
    if local is not None:
        return (ReadCounts(source, len(local), len(local), 0, skipped, "driver"),
                {name: agg.of(local) for name, agg in over_used.items()})
    extra = [agg.column().alias(name) for name, agg in over_used.items()]
    row = checked.agg(*_count_columns(), *extra).collect()[0]
    read, used = int(row["read"]), int(row["used"])
    return ReadCounts(source, read, used, read - used, skipped), {n: row[n] for n in over_used}


def _count_columns() -> list[Column]:
    """The aggregates of a count: the rows read, and the rows used (REASON null)."""
    return [F.count(F.lit(1)).alias("read"), F.count(F.when(used_row(), 1)).alias("used")]


class CountedInUse:
    """An input counted by the action that uses its rows, not by a scan of its own: `observe` the
    checked rows (with REASON) on their way to that action, then `counts` after it. Observe them in
    the action's last stage (after its shuffle): Spark takes a task's observed values there once,
    even when the task runs again, where a stage before a shuffle that runs again would count its
    rows twice. The quarantine is written after the action, by a second read of the input only when
    some rows were quarantined."""

    def __init__(self, read: ReadResult) -> None:
        self.read = read
        self._observation = Observation(f"{read.schema.name}_counts")

    def observe(self, checked: DataFrame) -> DataFrame:
        return checked.observe(self._observation, *_count_columns())

    def counts(self, quarantine_dir: Path | None) -> ReadCounts:
        """The counts the action observed; the quarantine written to `quarantine_dir` (see
        `write_quarantine`)."""
        row = self._observation.get
        counts = self.read.tally(int(row["read"]), int(row["used"]))
        if quarantine_dir is not None:
            write_quarantine(self.read, counts, quarantine_dir)
        return counts


def write_quarantine(read: ReadResult, counts: ReadCounts, quarantine_dir: Path) -> None:
    """The quarantined rows of `read` into `quarantine_dir` only when there are some; a stale
    quarantine from an earlier run into the same directory is removed."""
    if counts.quarantined:
        write_parquet(read.quarantined, quarantine_dir)
    elif quarantine_dir.exists():
        shutil.rmtree(quarantine_dir)


# Files Spark and Hadoop write beside their data: not telemetry, never listed as skipped.
_BOOKKEEPING = ("_SUCCESS", "_committed_", "_started_", "_temporary")


def hidden_files(path: str) -> tuple[str, ...]:
    """The files under folder `path` that Spark's file listing leaves out without a word: a name
    (of the file or of a folder on the way) starting with `_` or `.`; Spark's own bookkeeping files
    (`_SUCCESS`, `.crc` checksums, commit markers) aside."""
    root = Path(path)
    if not root.is_dir():
        return ()
    out = []
    for file in sorted(q for q in root.rglob("*") if q.is_file()):
        parts = file.relative_to(root).parts
        if not any(part.startswith(("_", ".")) for part in parts):
            continue
        if file.name.endswith(".crc") or any(part.startswith(_BOOKKEEPING) for part in parts):
            continue
        out.append(str(file))
    return tuple(out)


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
    """Read `path` into one row per record with `_row` (the original line or row, valid UTF-8) and
    `_line_reason` (why the whole line is quarantined, or null), and the fields: for JSON Lines the
    parsed line (`_parsed`, a VARIANT), for CSV every field as text, for Parquet every field as its
    native column when its type holds the field's values (an integer column for a `long`, a
    timestamp for a `time_ms`, ...) and as text otherwise.

    With `position`, also `FILE_ID` (a hash of the row's file) and `POSITION` (increasing with the
    row's place in its file): Parquet's own row index, which every scan gives again; for text
    formats an id given by the scan, stable only while the scan is the same (`check_once` caches
    those)."""
    fmt = fmt or detect_format(path)
    if fmt == "jsonl":
        text = (spark.read.option("recursiveFileLookup", "true" if Path(path).is_dir() else "false")
                .text(path))
        df = json_lines(text)
    elif fmt == "csv":
        raw = raw_schema(schema)
        with_corrupt = T.StructType([*raw.fields, T.StructField(CORRUPT, T.StringType(), True)])
        df = (spark.read.schema(with_corrupt)
              .option("header", "true")
              .option("mode", "PERMISSIVE")
              .option("columnNameOfCorruptRecord", CORRUPT)
              .option("enforceSchema", "false")
              .csv(path))
        df = df.select(*schema.field_names,
                       F.coalesce(F.col(CORRUPT), F.to_json(F.struct(*schema.field_names))).alias("_row"),
                       F.when(F.col(CORRUPT).isNotNull(), F.lit(UNPARSABLE)).alias(LINE_REASON))
    elif fmt == "parquet":
        src = spark.read.parquet(path)
        types = {f.name: f.dataType for f in src.schema.fields}
        where = ([F.xxhash64(F.col("_metadata.file_path")).alias(FILE_ID),
                  F.col("_metadata.row_index").alias(POSITION)] if position else [])
        df = src.select(*[_parquet_column(f, types.get(f.name)).alias(f.name) for f in schema.fields], *where)
        df = df.select("*", F.to_json(F.struct(*schema.field_names)).alias("_row"),
                       F.lit(None).cast("string").alias(LINE_REASON))
    else:
        raise InputError(path, "format", fmt, f"must be one of {', '.join(FORMATS)}")
    if position and fmt != "parquet":
        df = df.select("*", F.xxhash64(F.input_file_name()).alias(FILE_ID),
                       F.monotonically_increasing_id().alias(POSITION))
    return df


def json_lines(text: DataFrame, *keep: str) -> DataFrame:
    """JSON Lines as `read_raw` gives them, from a frame of lines (`value`): blank lines dropped,
    `_row`, `_line_reason` and the parsed line (`_parsed`), and the `keep` columns. The line, its
    parse and the parts its checks read are projected one after another, each once (see
    `quotaplane.core.spark.fields.line_parts`)."""
    line = SF.strip_bom(F.col("value"))
    lines = text.where(~SF.is_blank(line)).select("value", line.alias("_line"), *keep)
    for name, part in [(PARSED, F.try_parse_json(F.col("_line"))), *SF.line_parts(F.col("_line"))]:
        lines = lines.select("*", part.alias(name))
    return lines.select(SF.quarantined_text(F.col("value")).alias("_row"),
                        SF.line_reason(F.col("value"), F.col(PARSED)).alias(LINE_REASON),
                        F.col(PARSED), *keep)


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


def validate(schema: RecordSchema, raw: DataFrame) -> DataFrame:
    """Type every field (`quotaplane.core.spark.fields`, or a native Parquet column) and add
    `_reason`: the line's problem, else the first field problem, else the first row rule the row
    breaks, else null.

    A parsed field's kind, then its text (read from the kind's column), then its typed value, are
    each a column of their own, projected before the expressions that read them: each is read by
    many of the typing and problem expressions, mostly inside the branches of a CASE WHEN, where
    Spark's subexpression elimination does not reach, and would otherwise be computed again for each
    (half the time of checking a JSON Lines input)."""
    dtypes = {f.name: f.dataType for f in raw.schema.fields}
    sources: dict[str, tuple[int, Column, SF.TextOf, SF.JsonValue | None]] = {}
    for i, f in enumerate(schema.fields):
        if PARSED in raw.columns:
            sources[f.name] = (i, *SF.json_field(F.col(PARSED), f.name))
        elif not _is_native(f, dtypes.get(f.name)):
            sources[f.name] = (i, *SF.text_field(F.col(f.name)))
    staged = raw.select("*", *[kind.alias(f"_kind{i}") for i, kind, _, _ in sources.values()])
    staged = staged.select("*", *[text_of(F.col(f"_kind{i}")).alias(f"_text{i}")
                                  for i, _, text_of, _ in sources.values()])
    fields = {name: (F.col(f"_kind{i}"), F.col(f"_text{i}"), value)
              for name, (i, _, _, value) in sources.items()}
    staged = staged.select("*", *[SF.typed_value(f, *fields[f.name]).alias(f"_typed{i}")
                                  for i, f in enumerate(schema.fields) if f.name in fields])
    typed: dict[str, Column] = {}
    problems: list[Column] = [F.col(LINE_REASON)]
    for i, f in enumerate(schema.fields):
        if f.name in fields:
            value, problem = SF.field_outcome(f, *fields[f.name], F.col(f"_typed{i}"))
        else:
            column = F.col(f.name)
            value = F.unix_millis(column) if isinstance(dtypes[f.name], T.TimestampType) else column.cast(
                spark_type(f))
            problem = SF.native_problem(f, column)
        typed[f.name] = F.when(F.col(LINE_REASON).isNull(), value)
        problems.append(problem)
    checked = staged.select(
        *[typed[f.name].alias(f.name) for f in schema.fields],
        F.coalesce(*problems).alias("_type_reason"),
        F.col("_row"),
        *[c for c in (FILE_ID, POSITION) if c in raw.columns],
    )
    cols = {f.name: F.col(f.name) for f in schema.fields}
    rule_reasons = [F.when(rule.violated(cols), F.lit(rule.reason)) for rule in schema.rules]
    reason = F.coalesce(F.col("_type_reason"), *rule_reasons) if rule_reasons else F.col("_type_reason")
    return checked.withColumn(REASON, reason).drop("_type_reason")


def read_telemetry(spark: SparkSession, schema: RecordSchema, path: str,
                   fmt: str | None = None, position: bool = False) -> ReadResult:
    """Read and check one input; see `ReadResult` (and `read_raw` for `position`)."""
    fmt = fmt or detect_format(path)
    return ReadResult(schema, path, validate(schema, read_raw(spark, schema, path, fmt, position)), fmt,
                      hidden_files(path))


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
    aggregates: dict[str, Any] = field(default_factory=dict)  # `check_once(..., over_used=)`

    @property
    def used(self) -> DataFrame:
        """The used rows: the schema's fields (and `FILE_ID`, `POSITION` if read).

        When the counting scan quarantined no row, every row is used: a later scan of the same
        files types the fields without checking the rules again (their regular expressions are
        most of a Parquet input's check)."""
        if self.counts.quarantined == 0:
            return self.rows.drop(REASON)
        return self.rows.where(used_row()).drop(REASON)

    def release(self) -> None:
        if self.cached:
            self.rows.unpersist()


def check_once(read: ReadResult, quarantine_dir: Path | None, cache: bool | None = None,
               over_used: Mapping[str, UsedAggregate] | None = None) -> CheckedInput:
    """Count read/used/quarantined in one scan of `read`, and write the quarantined rows to
    `quarantine_dir` only when there are some (a stale quarantine from an earlier run into the same
    directory is removed). The rows keep `FILE_ID` and `POSITION` when they were read with them.

    With `cache` (by default: unless the input is Parquet) the typed rows are cached by that same
    scan, so later steps do not parse the text again; Parquet is cheaper to scan again than to
    cache (measured in docs/performance.md). `over_used` names aggregates of the used rows
    computed by the same scan (`CheckedInput.aggregates`: null when no row is used). Rows the
    driver read (`ReadResult.local`) are counted and aggregated there, and not cached: no scan."""
    cache = read.fmt != "parquet" and read.local is None if cache is None else cache
    where = [c for c in (FILE_ID, POSITION) if c in read.checked.columns]
    rows = read.checked.select(*read.schema.field_names, *where, REASON)
    if cache:
        rows = rows.persist(StorageLevel.MEMORY_AND_DISK)
    counts, aggregates = _count(rows, read.source, read.skipped, over_used, read.local)
    if quarantine_dir is not None:
        write_quarantine(read, counts, quarantine_dir)
    return CheckedInput(read.schema, counts, rows, cache, aggregates)
