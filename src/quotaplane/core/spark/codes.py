"""Small integer codes turned back into the names they stand for, in Spark.

A Python pass (an Arrow group or partition function) hands columns of few values over as byte codes:
cheaper to send, cache and shuffle than strings. The tables name them again when they are written.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F


def named(codes: Column, names: Sequence[str | None], never_null: bool = False) -> Column:
    """`names[code]` for each code, null for any other code: a `CASE` over the few names. With
    `never_null` (every code names a value, none of them null) the last name is the `ELSE`, so that
    Spark knows the column is not null."""
    out = F.when(codes == 0, F.lit(names[0]).cast("string"))
    for i in range(1, len(names) - 1 if never_null else len(names)):
        out = out.when(codes == i, F.lit(names[i]).cast("string"))
    return out.otherwise(F.lit(names[-1])) if never_null else out
