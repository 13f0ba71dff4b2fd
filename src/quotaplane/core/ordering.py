"""Sort keys that order collected rows in Python as Spark's `orderBy` orders them: ascending puts
nulls first, descending puts them last. Small tables are ordered in the driver after `collect`
(an `orderBy` before it costs Spark a sampling job of its own)."""

from __future__ import annotations

from typing import Any


def nulls_first(*values: Any) -> tuple[Any, ...]:
    """Spark's ascending order of `values`, in turn: nulls first."""
    return tuple(x for v in values for x in (v is not None, v if v is not None else 0))


def descending(value: float | None) -> tuple[bool, float]:
    """Spark's descending order of a number: nulls last."""
    return (value is None, -(value or 0))
