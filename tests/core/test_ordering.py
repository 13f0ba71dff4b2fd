"""Python sort keys ordering collected rows as Spark's `orderBy` does."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from quotaplane.core.ordering import descending, nulls_first

ROWS = [("b", 2, 0.5), (None, 1, None), ("a", None, 2.0), ("a", 3, 0.5), (None, None, 1.0), ("b", 1, None)]


def test_ascending_puts_nulls_first_in_every_position() -> None:
    got = sorted(ROWS, key=lambda r: nulls_first(r[0], r[1]))
    assert [r[:2] for r in got] == [(None, None), (None, 1), ("a", None), ("a", 3), ("b", 1), ("b", 2)]


def test_descending_puts_nulls_last_and_keeps_equal_values_stable() -> None:
    got = sorted(ROWS, key=lambda r: descending(r[2]))
    assert [r[2] for r in got] == [2.0, 1.0, 0.5, 0.5, None, None]
    assert got[2:4] == [ROWS[0], ROWS[3]]
    assert descending(0) < descending(None) and descending(-1.5) < descending(None)


@pytest.mark.spark
def test_the_keys_order_as_spark_orders(spark) -> None:
    frame = spark.createDataFrame(ROWS, "s string, n long, x double")
    ordered = frame.orderBy(F.col("x").desc(), F.col("s").asc(), F.col("n").asc())
    expected = [tuple(r) for r in ordered.collect()]
    assert sorted(ROWS, key=lambda r: (*descending(r[2]), *nulls_first(r[0], r[1]))) == expected
