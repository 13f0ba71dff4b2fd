"""The differential harness's row comparer and its engine driver, without Spark."""

from __future__ import annotations

from collections.abc import Generator

import pytest

from tests.support.differential import Engines, assert_engines_agree, assert_rows_equal, same


def test_rows_compare_as_multisets_in_any_order() -> None:
    assert_rows_equal([{"a": 1, "b": "x"}, {"a": 2, "b": None}], [{"a": 2, "b": None}, {"a": 1, "b": "x"}])
    with pytest.raises(AssertionError, match="1 reference rows missing from spark, 0 spark rows"):
        assert_rows_equal([{"a": 1}, {"a": 1}], [{"a": 1}])


def test_values_are_equal_exactly_as_the_engines_give_them() -> None:
    assert same(-0.0, 0.0) and same(float("nan"), float("nan")) and same(None, None)
    assert not same(0.1 + 0.2, 0.3)  # bit for bit
    assert not same(True, 1) and not same(1, 1.0) and not same(None, 0) and not same("1", 1)
    assert_rows_equal([{"x": float("nan"), "y": -0.0}], [{"x": float("nan"), "y": 0.0}])
    with pytest.raises(AssertionError):
        assert_rows_equal([{"x": 1}], [{"x": 1.0}])


def test_a_mismatch_names_the_table_and_the_differing_columns() -> None:
    with pytest.raises(AssertionError) as failure:
        assert_rows_equal([{"k": 1, "a": 1.0, "b": "s"}], [{"k": 1, "a": 1.5, "b": "s"}], label="meters")
    assert "meters:" in str(failure.value) and "differ in ['a']" in str(failure.value)
    with pytest.raises(AssertionError, match="reference row has columns"):
        assert_rows_equal([{"k": 1}], [{"k": 1, "extra": 2}])


def test_only_the_named_columns_are_compared() -> None:
    assert_rows_equal([{"k": 1, "a": 1}], [{"k": 1, "a": 2}], columns=["k"])


def test_the_harness_compares_every_table_and_cleans_up_after_collecting() -> None:
    events: list[str] = []

    def on_spark(session: object, config: int, records: list[int]) -> Generator[dict[str, list[dict]]]:
        events.append("start")
        yield {"t": [{"v": r * config} for r in records]}
        events.append("cleaned")

    engines: Engines[int, list[int]] = Engines(lambda c, rs: {"t": [{"v": r * c} for r in reversed(rs)]},
                                               on_spark)
    assert_engines_agree(engines, None, 2, [1, 2, 3])
    assert events == ["start", "cleaned"]
    wrong: Engines[int, list[int]] = Engines(lambda c, rs: {"t": [{"v": r + c} for r in rs]}, on_spark)
    with pytest.raises(AssertionError, match="t: "):
        assert_engines_agree(wrong, None, 2, [1, 2, 3])
    missing: Engines[int, list[int]] = Engines(lambda c, rs: {"t": [], "u": []}, on_spark)
    with pytest.raises(AssertionError, match="tables: reference"):
        assert_engines_agree(missing, None, 2, [])
