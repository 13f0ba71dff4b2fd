"""Small Spark DataFrames from Python rows, built through pandas/Arrow so that Spark plans them as
local tables (no Python worker per scan)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from quotaplane.core.records import RecordSchema

_DTYPES = {"long": "Int64", "time_ms": "Int64", "double": "Float64", "string": "object", "bool": "boolean"}


def frame(spark, rows: Sequence[dict[str, Any]], schema: RecordSchema):
    pdf = pd.DataFrame({f.name: pd.Series([r.get(f.name) for r in rows], dtype=_DTYPES[f.type])
                        for f in schema.fields})
    return spark.createDataFrame(pdf, schema.spark_schema())
