"""`local_table`: rows made on the driver, as dicts or objects, into a DataFrame of a schema."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from pyspark.sql import types as T

from quotaplane.core.spark.local_table import local_table

SCHEMA = T.StructType([T.StructField("name", T.StringType(), False),
                       T.StructField("count", T.LongType(), True),
                       T.StructField("rate", T.DoubleType(), True)])


@dataclass(frozen=True)
class Row:
    name: str
    count: int | None
    rate: float | None
    extra: str = "not a column"


@pytest.mark.spark
def test_dicts_and_objects_give_the_same_rows_with_their_nulls(spark) -> None:
    rows = [Row("a", 2**62, 0.5), Row("b", None, None)]
    from_objects = local_table(spark, rows, SCHEMA)
    dicts = [{"name": r.name, "count": r.count, "rate": r.rate} for r in rows]
    from_dicts = local_table(spark, dicts, SCHEMA)
    expected = [("a", 2**62, 0.5), ("b", None, None)]
    assert [tuple(r) for r in from_objects.collect()] == expected
    assert [tuple(r) for r in from_dicts.collect()] == expected
    assert from_objects.schema == SCHEMA


@pytest.mark.spark
def test_no_rows_give_an_empty_table_of_the_schema(spark) -> None:
    empty = local_table(spark, [], SCHEMA)
    assert empty.schema == SCHEMA and empty.count() == 0
