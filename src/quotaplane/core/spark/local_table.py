"""A small table made on the driver: rows (dicts, or objects) as a DataFrame of a given schema."""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T


def local_table(spark: SparkSession, rows: Sequence[Any], schema: T.StructType) -> DataFrame:
    """`rows` as a DataFrame of `schema`, through pandas and Arrow: no Python worker runs (long
    columns as pandas' nullable Int64, so nulls stay nulls). A row is a mapping of the schema's
    column names, or an object with an attribute per column (a dataclass)."""
    value = operator.getitem if rows and isinstance(rows[0], Mapping) else getattr
    columns = {f.name: pd.Series([value(r, f.name) for r in rows],
                                 dtype="Int64" if isinstance(f.dataType, T.LongType) else "object")
               for f in schema.fields}
    return spark.createDataFrame(pd.DataFrame(columns), schema)
