"""`side_by_side`: independent actions run in threads; results in order; every action finished
before it returns or raises."""

from __future__ import annotations

import threading
import time

import pytest

from quotaplane.core.spark.side_by_side import side_by_side


def test_results_come_in_the_order_given_and_the_others_run_in_threads_of_their_own() -> None:
    main = threading.get_ident()
    seen: list[int] = []
    both = threading.Barrier(3, timeout=5)  # all three at once: none waits for another to finish

    def action(value: int):
        def run() -> int:
            seen.append(threading.get_ident())
            both.wait()
            return value
        return run

    assert side_by_side(action(1), action(2), action(3)) == [1, 2, 3]
    assert seen.count(main) == 1 and len(set(seen)) == 3


def test_one_action_runs_alone() -> None:
    assert side_by_side(lambda: "only") == ["only"]


def test_a_failure_is_raised_after_every_action_has_finished() -> None:
    finished: list[str] = []

    def slow() -> None:
        time.sleep(0.2)
        finished.append("slow")

    def fails() -> None:
        raise ValueError("bad")

    with pytest.raises(ValueError, match="bad"):
        side_by_side(fails, slow)
    assert finished == ["slow"]
    with pytest.raises(ValueError, match="bad"):
        side_by_side(slow, fails)
    assert finished == ["slow", "slow"]


def test_the_first_failure_in_the_order_given_is_raised() -> None:
    def fail(message: str):
        def run() -> None:
            raise RuntimeError(message)
        return run

    with pytest.raises(RuntimeError, match="first"):
        side_by_side(fail("first"), fail("second"))
    with pytest.raises(RuntimeError, match="second"):
        side_by_side(lambda: None, fail("second"), fail("third"))
