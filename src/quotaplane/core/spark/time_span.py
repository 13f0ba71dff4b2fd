"""The first and last time of the rows an action computes, observed by that action (a Spark
`Observation`: no extra pass over the rows)."""

from __future__ import annotations

from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F


class TimeSpan:
    """`observe(df)` the rows; after an action over what it returns, `value` is the least and the
    greatest `column` (epoch ms) of those rows, or None when there were none."""

    def __init__(self, name: str, column: str = "ts_ms") -> None:
        self.observation = Observation(name)
        self.column = column

    def observe(self, df: DataFrame) -> DataFrame:
        return df.observe(self.observation, F.min(self.column).alias("first"),
                          F.max(self.column).alias("last"))

    @property
    def value(self) -> tuple[int, int] | None:
        got = self.observation.get
        return None if got["first"] is None else (int(got["first"]), int(got["last"]))
