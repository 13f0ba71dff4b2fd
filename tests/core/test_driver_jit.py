"""The driver's compilers: C1 only for a run of fewer rows than the interpreted-expressions line."""

from __future__ import annotations

import pytest

from quotaplane.core.spark import driver_jit
from quotaplane.core.spark.driver_jit import C1_ONLY, ENV, jit_for
from quotaplane.core.spark.expressions import DEFAULT_INTERPRETED_BELOW_ROWS


@pytest.fixture(autouse=True)
def _no_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)


def test_fewer_rows_than_the_line_start_the_driver_with_c1_only() -> None:
    assert DEFAULT_INTERPRETED_BELOW_ROWS == 50_000
    small = jit_for(49_999)
    assert small.as_dict() == {"mode": "C1 only", "reason": "49,999 input rows, fewer than 50,000"}
    assert small.options == C1_ONLY == "-XX:TieredStopAtLevel=1"
    assert jit_for(0).options == C1_ONLY


@pytest.mark.parametrize("rows", [50_000, 10**9])
def test_the_line_and_more_keep_both_compilers(rows: int) -> None:
    choice = jit_for(rows)
    assert choice.as_dict() == {"mode": "tiered", "reason": "50,000 input rows or more"}
    assert choice.options is None


def test_uncounted_inputs_keep_both_compilers() -> None:
    assert jit_for(None).as_dict() == {"mode": "tiered",
                                       "reason": "inputs not counted (not local files, or compressed)"}


@pytest.mark.parametrize("value", ["tiered", "TIERED", " tiered "])
def test_the_environment_keeps_both_compilers(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(ENV, value)
    assert jit_for(10).as_dict() == {"mode": "tiered", "reason": f"{ENV}=tiered"}


def test_a_session_the_run_did_not_start_is_not_chosen_for() -> None:
    assert driver_jit.NOT_CHOSEN.options is None and driver_jit.NOT_CHOSEN.mode == "not chosen"
