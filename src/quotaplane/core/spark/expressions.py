"""Generated or interpreted Spark expressions, chosen by how many rows a run reads.

Spark generates and compiles Java code for the expressions of every new plan (projections,
predicates, orderings): Janino's compile and the JIT's work on the new classes take most of a small
run, where the rows are too few to repay them. A run whose inputs hold fewer rows than
`spark.quotaplane.interpretedBelowRows` (default 50,000; 0 turns the choice off) evaluates its
expressions with Spark's interpreted implementations (`spark.sql.codegen.factoryMode=NO_CODEGEN`),
which give the same results; larger runs keep the generated code. A factory mode set by the user
is left as it is. The measurements behind the default are in docs/performance.md ("Interpreted
expressions for small runs").

The rows are counted from the input files without Spark: Parquet footers, text lines. Counting
stops at the threshold; an input that is not a local file or folder, or is compressed, cannot be
counted, and then the run keeps the generated code.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from quotaplane.core.errors import InputError
from quotaplane.core.spark.settings import rows_setting
from quotaplane.core.telemetry_files import COMPRESSED_SUFFIXES, input_files

FACTORY_MODE = "spark.sql.codegen.factoryMode"
#: Spark's default factory mode: generated code, interpreted where generating fails
GENERATED = "FALLBACK"
INTERPRETED = "NO_CODEGEN"
THRESHOLD = "spark.quotaplane.interpretedBelowRows"
DEFAULT_INTERPRETED_BELOW_ROWS = 50_000

_CHUNK = 1 << 20


@dataclass(frozen=True)
class ExpressionChoice:
    """How the run's expressions are evaluated, and why (for `summary.json`)."""

    mode: str  # "interpreted", "generated" or "as configured"
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"mode": self.mode, "reason": self.reason}


def count_rows(paths: Iterable[str], limit: int) -> int | None:
    """The rows of the files at `paths` (files or folders), counted up to `limit` (then `limit`):
    a Parquet file's rows from its footer, any other file's lines. Files Spark does not read
    (a name on the way starting with `_` or `.`) are left out. None when a path is not a local file
    or folder, or a file is compressed."""
    total = 0
    for path in paths:
        try:
            files = input_files(Path(path))
        except InputError:  # not a local file or folder
            return None
        for file in files:
            if file.suffix.lower() in COMPRESSED_SUFFIXES:
                return None
            total += _parquet_rows(file) if file.suffix.lower() == ".parquet" else _lines(file, limit - total)
            if total >= limit:
                return limit
    return total


def _parquet_rows(file: Path) -> int:
    """A Parquet file's rows from its footer; `InputError` when it has none (not a Parquet file)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return int(pq.read_metadata(file).num_rows)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(str(file), "(file)", file.name, f"is not a readable Parquet file: {exc}") from None


def _lines(file: Path, limit: int) -> int:
    """The lines of `file` (a last line without a line break counts), counted up to `limit`."""
    lines, last = 0, b"\n"
    with file.open("rb") as handle:
        while lines < limit and (chunk := handle.read(_CHUNK)):
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    return lines + (last != b"\n")


def interpreted_below_rows(spark: Any) -> int:
    """`spark.quotaplane.interpretedBelowRows` of the session (default 50,000)."""
    return rows_setting(spark, THRESHOLD, DEFAULT_INTERPRETED_BELOW_ROWS,
                        "0 keeps Spark's generated code for every run")


@contextmanager
def expressions_for(spark: Any, inputs: Iterable[str]) -> Iterator[ExpressionChoice]:
    """Evaluate the expressions of what runs inside interpreted when the `inputs` hold fewer rows
    than the session's threshold (module docstring); the session's factory mode is restored after."""
    limit = interpreted_below_rows(spark)
    current = spark.conf.get(FACTORY_MODE, GENERATED)
    if current != GENERATED:
        yield ExpressionChoice("as configured", f"{FACTORY_MODE}={current}")
        return
    if limit == 0:
        yield ExpressionChoice("generated", f"{THRESHOLD}=0")
        return
    rows = count_rows(inputs, limit)
    if rows is None or rows >= limit:
        counted = ("inputs not counted (not local files, or compressed)" if rows is None
                   else f"{limit:,} input rows or more")
        yield ExpressionChoice("generated", f"{counted}, {THRESHOLD}={limit}")
        return
    spark.conf.set(FACTORY_MODE, INTERPRETED)
    try:
        yield ExpressionChoice("interpreted", f"{rows:,} input rows, fewer than {THRESHOLD}={limit}")
    finally:
        spark.conf.set(FACTORY_MODE, current)
