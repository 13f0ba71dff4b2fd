"""The one differential harness: the same config and records through both engines, one row comparer.

`assert_rows_equal(expected, actual)` compares two tables as multisets of rows (order-insensitive),
exactly: numbers with `==` (floats bit for bit but for the sign of zero, as Spark compares them),
NaN equal to NaN, None equal to null, booleans only to booleans. A mismatch names the table, the
columns that differ and both rows. `collect_tables` collects several Spark outputs in ONE job, and
`assert_tables_equal` compares every named output of the reference run with the Spark run's.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Row = Mapping[str, Any]


def rows_of(table: Any, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Rows as dicts from a DataFrame, Spark Rows, dicts, dataclass-like objects with `as_dict`, or
    tuples (then `columns` names them); only `columns` are kept when given."""
    if hasattr(table, "collect") and hasattr(table, "schema"):
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
    if isinstance(value, int | float):
        return (2, 0, 0.0) if value != value else (2, 1, float(value) if isinstance(value, float) else value)
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


def collect_tables(frames: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Collect several DataFrames in ONE Spark job (as JSON rows, union by name), typed back:
    doubles that JSON cannot hold (NaN, infinities) are restored."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    parts = [df.select(F.lit(name).alias("_table"), F.to_json(F.struct(*df.columns)).alias("_row"))
             for name, df in frames.items()]
    union = parts[0]
    for part in parts[1:]:
        union = union.unionByName(part)
    doubles = {name: {f.name for f in df.schema.fields if isinstance(f.dataType, T.DoubleType | T.FloatType)}
               for name, df in frames.items()}
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in frames}
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
