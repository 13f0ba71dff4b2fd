"""Independent small Spark actions run side by side, each from its own thread.

A small action spends much of its time in the driver (planning, code generation, scheduling) and in
stages too small to keep every core busy; a second action's tasks fill those gaps. PySpark gives
each Python thread its own JVM thread, and Spark Connect serves concurrent requests of one session.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any


def side_by_side(first: Callable[[], Any], *others: Callable[[], Any]) -> list[Any]:
    """The results of `first` (run in this thread) and `others` (each in a thread of its own), in
    order. Every action is waited for; the first error raised, in that order, is raised."""
    if not others:
        return [first()]
    with ThreadPoolExecutor(max_workers=len(others), thread_name_prefix="spark-action") as pool:
        futures = [pool.submit(action) for action in others]
        try:
            result = first()
        finally:
            # the others finish (or fail) before this returns or raises: none outlives the call
            outcomes = [f.exception() for f in futures]
        for failure in outcomes:
            if failure is not None:
                raise failure
        return [result, *(f.result() for f in futures)]
