"""What a DataFrame's physical plan does, counted: the guard of the plan tests.

`operators(df)` counts the operators of the plan Spark would run for `df` (the executed plan as the
test session builds it, adaptive execution off, so the plan is the static one). A plan test states
how many shuffles (`Exchange`), sorts (`Sort`) and sort-based aggregations (`SortAggregate`) a
stage's tables may cost, so that a change which adds a pass over the rows fails a test instead of
showing up only in a benchmark.
"""

from __future__ import annotations

import re
from collections import Counter

from pyspark.sql import DataFrame

_OPERATOR = re.compile(r"^[\s:|+\-*]*(?:\(\d+\)\s*)?([A-Za-z]+)")

SHUFFLE = "Exchange"  # a shuffle of rows (hash or range partitioning); `BroadcastExchange` is apart
SORT = "Sort"
SORT_AGGREGATE = "SortAggregate"
WINDOW = "Window"
PYTHON_GROUPS = "FlatMapGroupsInPython"  # a pass of Python group functions, pandas or Arrow
MAP_IN_ARROW = "MapInArrow"  # a pass of one Python call per partition over Arrow
_COUNTED_AS = {"FlatMapGroupsInPandas": PYTHON_GROUPS, "FlatMapGroupsInArrow": PYTHON_GROUPS}


def plan_text(df: DataFrame) -> str:
    """The executed physical plan's tree, one operator per line."""
    return str(df._jdf.queryExecution().executedPlan().treeString())


def operators(df: DataFrame) -> Counter[str]:
    """How many times each physical operator occurs in `df`'s plan (a reused exchange counts as
    `ReusedExchange`, not as another shuffle; a pandas or Arrow group pass as `PYTHON_GROUPS`)."""
    counts: Counter[str] = Counter()
    for line in plan_text(df).splitlines():
        match = _OPERATOR.match(line)
        if match:
            counts[_COUNTED_AS.get(match.group(1), match.group(1))] += 1
    return counts


def describe(df: DataFrame) -> str:
    """The counts that plan tests guard, and the plan, for an assertion message."""
    ops = operators(df)
    wanted = (SHUFFLE, SORT, SORT_AGGREGATE, WINDOW, PYTHON_GROUPS)
    return ", ".join(f"{name}={ops[name]}" for name in wanted) + "\n" + plan_text(df)
