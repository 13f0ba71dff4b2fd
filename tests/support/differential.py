"""The one differential harness: the same config and records through both engines, one row comparer.

`assert_rows_equal(expected, actual)` compares two tables as multisets of rows (order-insensitive),
exactly: numbers with `==` (floats bit for bit but for the sign of zero, as Spark compares them),
NaN equal to NaN, None equal to null, booleans only to booleans, whole numbers only to whole numbers
(a long is never equal to a double). A mismatch names the table, the
columns that differ and both rows. `collect_tables` collects several Spark outputs in ONE job, and
`assert_tables_equal` compares every named output of the reference run with the Spark run's.

The harness: a policy's `Engines` adapt its two engines to the same config and records (the reference
run gives each output table as rows, the Spark run as DataFrames), and `assert_engines_agree` runs
both and compares every named table. `records_frame` builds a small input DataFrame from dict rows.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from quotaplane.core.records import RecordSchema

Row = Mapping[str, Any]
C = TypeVar("C")
R = TypeVar("R")
Tables = Mapping[str, Any]


def rows_of(table: Any, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Rows as dicts from a DataFrame, Spark Rows, dicts, dataclass-like objects with `as_dict`, or
    tuples (then `columns` names them); only `columns` are kept when given."""
    if _is_frame(table):
        table = table.collect()
    out = []
    for row in table:
        if hasattr(row, "asDict"):
            d = row.asDict(recursive=True)
        elif isinstance(row, Mapping):
            d = dict(row)
        elif hasattr(row, "as_dict"):
            d = row.as_dict()
        else:
            if columns is None:
                raise TypeError("tuples need column names")
            d = dict(zip(columns, row, strict=True))
        out.append({c: d[c] for c in columns} if columns is not None else d)
    return out


def _key(value: Any) -> tuple[Any, ...]:
    """A total order over mixed values, consistent with `same`."""
    if value is None:
        return (0,)
    if isinstance(value, bool):
        return (1, value)
    if isinstance(value, float):
        return (2, 1, 0, 0.0) if math.isnan(value) else (2, 1, 1, value)
    if isinstance(value, int):
        return (2, 0, 1, value)
    if isinstance(value, Mapping):
        return (4, tuple(sorted((k, _key(v)) for k, v in value.items())))
    if isinstance(value, list | tuple):
        return (5, tuple(_key(v) for v in value))
    return (3, str(type(value)), value)


def same(a: Any, b: Any) -> bool:
    """Exact equality of two values as the two engines give them (module docstring)."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    numbers = isinstance(a, int | float) and isinstance(b, int | float)
    if numbers and isinstance(a, float) != isinstance(b, float):
        return False  # a whole number (a long column) is not a double
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def assert_rows_equal(expected: Any, actual: Any, columns: Sequence[str] | None = None,
                      label: str = "rows") -> None:
    """`expected` and `actual` hold the same rows, in any order (module docstring)."""
    want, got = rows_of(expected, columns), rows_of(actual, columns)
    names = list(columns) if columns is not None else sorted({k for r in want + got for k in r})
    for side, rows in (("reference", want), ("spark", got)):
        for r in rows:
            if sorted(r) != sorted(names):
                raise AssertionError(f"{label}: {side} row has columns {sorted(r)}, expected {names}")
    key = lambda r: tuple(_key(r.get(c)) for c in names)  # noqa: E731
    only_want = Counter(key(r) for r in want) - Counter(key(r) for r in got)
    only_got = Counter(key(r) for r in got) - Counter(key(r) for r in want)
    if not only_want and not only_got:
        return
    missing = sorted((r for r in want if key(r) in only_want), key=key)
    extra = sorted((r for r in got if key(r) in only_got), key=key)
    message = (f"{label}: {sum(only_want.values())} reference rows missing from spark, "
               f"{sum(only_got.values())} spark rows not in the reference")
    if missing and extra:
        w = missing[0]
        g = max(extra, key=lambda r: sum(same(w[c], r[c]) for c in names))
        message += (f"; the first missing row and the nearest spark row differ in "
                    f"{[c for c in names if not same(w[c], g[c])]}:\n  reference {w}\n  spark     {g}")
    else:
        message += f":\n  {'reference' if missing else 'spark'} {(missing or extra)[0]}"
    raise AssertionError(message)


def _is_frame(table: Any) -> bool:
    return hasattr(table, "collect") and hasattr(table, "schema")


def collect_tables(tables: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Collect the DataFrames among `tables` in ONE Spark job (as JSON rows, union by name), typed
    back: doubles that JSON cannot hold (NaN, infinities) are restored. Tables already given as rows
    are taken as they are."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    out: dict[str, list[dict[str, Any]]] = {name: rows_of(table) for name, table in tables.items()
                                            if not _is_frame(table)}
    frames = {name: df for name, df in tables.items() if _is_frame(df)}
    if not frames:
        return out
    parts = [df.select(F.lit(name).alias("_table"), F.to_json(F.struct(*df.columns)).alias("_row"))
             for name, df in frames.items()]
    union = parts[0]
    for part in parts[1:]:
        union = union.unionByName(part)
    doubles = {name: {f.name for f in df.schema.fields if isinstance(f.dataType, T.DoubleType | T.FloatType)}
               for name, df in frames.items()}
    out.update({name: [] for name in frames})
    for row in union.collect():
        record = json.loads(row["_row"])
        full = {c: record.get(c) for c in frames[row["_table"]].columns}  # to_json drops nulls
        for c in doubles[row["_table"]]:
            if isinstance(full[c], str | int):
                full[c] = float(full[c])
        out[row["_table"]].append(full)
    return out


def assert_tables_equal(expected: Mapping[str, Iterable[Any]], actual: Mapping[str, Any],
                        columns: Mapping[str, Sequence[str]] | None = None) -> None:
    """Every table of the reference run equals the same table of the Spark run."""
    assert set(expected) <= set(actual), f"missing tables: {set(expected) - set(actual)}"
    for name, rows in expected.items():
        assert_rows_equal(rows, actual[name], (columns or {}).get(name), label=name)


@dataclass(frozen=True)
class Engines(Generic[C, R]):
    """One policy's two engines, each run on the same config `C` and records `R`.

    `reference(config, records)` gives every output table as rows (dicts or objects with `as_dict`);
    `spark(session, config, records)` gives the same tables as DataFrames (or rows), either returned
    or yielded once (code after the `yield` runs once they are collected: unpersist there).
    `columns` names the compared columns of a table (default: all of them, on both sides alike).
    """

    reference: Callable[[C, R], Mapping[str, Iterable[Any]]]
    spark: Callable[[Any, C, R], Tables | Generator[Tables, None, None]]
    columns: Mapping[str, Sequence[str]] = field(default_factory=dict)


def assert_engines_agree(engines: Engines[C, R], session: Any, config: C, records: R) -> None:
    """Run `config` and `records` through both engines; every named table must be the same."""
    expected = engines.reference(config, records)
    produced = engines.spark(session, config, records)
    if isinstance(produced, Generator):
        with contextmanager(lambda: produced)() as tables:
            actual = collect_tables(tables)
    else:
        actual = collect_tables(produced)
    assert set(expected) == set(actual), f"tables: reference {sorted(expected)}, spark {sorted(actual)}"
    assert_tables_equal(expected, actual, engines.columns)


_DTYPES = {"long": "Int64", "time_ms": "Int64", "double": "Float64", "string": "object", "bool": "boolean"}


def records_frame(session: Any, rows: Sequence[Mapping[str, Any]], schema: RecordSchema) -> Any:
    """`rows` (dicts; a missing field is null) as a DataFrame of `schema`, built through pandas and
    Arrow so that Spark plans it as a local table (no Python worker per scan)."""
    import pandas as pd

    from quotaplane.core.spark.schemas import spark_schema

    pdf = pd.DataFrame({f.name: pd.Series([r.get(f.name) for r in rows], dtype=_DTYPES[f.type])
                        for f in schema.fields})
    return session.createDataFrame(pdf, spark_schema(schema))
