"""`TimeSpan`: the least and greatest time of the rows an action computed, observed by it."""

from __future__ import annotations

import pytest

from quotaplane.core.spark.time_span import TimeSpan

pytestmark = pytest.mark.spark


def test_the_span_of_the_rows_the_action_computed(spark) -> None:
    span = TimeSpan("test_span")
    rows = spark.createDataFrame([(5, "a"), (-3, "b"), (12, "c")], "ts_ms long, x string")
    assert span.observe(rows.where("x != 'c'")).count() == 2
    assert span.value == (-3, 5)


def test_no_rows_no_span(spark) -> None:
    span = TimeSpan("test_empty_span", column="t")
    assert span.observe(spark.createDataFrame([], "t long")).count() == 0
    assert span.value is None
