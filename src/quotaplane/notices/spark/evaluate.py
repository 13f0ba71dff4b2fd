"""Producer traffic -> throttle notices and their comparison, as `DataFrame -> DataFrame` transforms.

spec: pip-385-producer-throttle-protocol; rules in docs/notices.md. Notices are sequential per
broker (token buckets, pending requests, gating), so each broker is one `applyInPandas` group
evaluated by the numpy kernel `quotaplane.notices.engine.kernel.evaluate_broker`, which resolves
the limits of each distinct topic once (an event's limits depend on its topic alone): the events
cross to Python with only their own columns, not five more per event. `comparison` is the
`notice_comparison` aggregate (`quotaplane.notices.engine.evaluate.compare`).

Output schemas are declared once as record schemas: `NOTICE_RECORD` (the kernel's columns) and
`COMPARISON_RECORD`, turned into Spark types by `quotaplane.core.spark.schemas.spark_schema`.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from quotaplane.core.records import Field, RecordSchema
from quotaplane.core.spark.schemas import spark_schema
from quotaplane.notices.config import NoticeConfig
from quotaplane.notices.engine.evaluate import COMPARISON_COLUMNS, IN_TIME, LATE, UNSUPPORTED
from quotaplane.notices.engine.kernel import NOTICE_RECORD, evaluate_broker
from quotaplane.notices.records import TRAFFIC_COLUMNS

COMPARISON_RECORD = RecordSchema(
    name="notice_comparison",
    doc="Per (broker, topic, reason): the notices and what their pauses cost (docs/notices.md, Outputs).",
    fields=(Field("broker", "string"), Field("topic", "string"), Field("reason", "string"),
            *(Field(name, "long") for name in COMPARISON_COLUMNS[3:])),
)
NOTICE_SCHEMA = spark_schema(NOTICE_RECORD)
COMPARISON_SCHEMA = spark_schema(COMPARISON_RECORD)
NO_RECEIPT = -1  # `receipt_latency_ms` of an event with no receipt, in the kernel's input


def kernel_input(traffic: DataFrame) -> DataFrame:
    """Used `producer_traffic` rows -> the kernel's input: the defaults of docs/notices.md (Input)
    applied in Spark, so that no long column handed to pandas holds a null (Arrow would make it a
    double); a missing receipt is `NO_RECEIPT`."""
    defaults = {"messages": F.lit(1).cast("long"), "supports_throttle": F.lit(False),
                "receipt_latency_ms": F.lit(NO_RECEIPT).cast("long"),
                "publish_latency_ms": F.lit(0).cast("long"), "broker": F.lit("")}
    return traffic.select(*[F.coalesce(F.col(c), defaults[c]).alias(c) if c in defaults else F.col(c)
                            for c in TRAFFIC_COLUMNS])


def evaluate_notices(config: NoticeConfig) -> Callable[[DataFrame], DataFrame]:
    """Used `producer_traffic` rows -> `notice_decisions` (`NOTICE_SCHEMA`): one `applyInPandas`
    group per broker around the numpy kernel."""

    def group(pdf: pd.DataFrame) -> pd.DataFrame:
        out = evaluate_broker(config, pdf)
        for f in NOTICE_RECORD.fields:
            if f.type != "string" and out[f.name].dtype == object:
                raise ValueError(f"{f.name} of a notice of broker {out['broker'].iloc[0]!r} is beyond a LONG")
        return out

    def transform(traffic: DataFrame) -> DataFrame:
        return traffic.transform(kernel_input).groupBy("broker").applyInPandas(group, NOTICE_SCHEMA)

    return transform


def comparison(notices: DataFrame) -> DataFrame:
    """`notice_decisions` -> `notice_comparison` (`COMPARISON_SCHEMA`): per (broker, topic, reason),
    the notices, their receipts and the sums of their pauses with and without notices."""
    return (notices.groupBy("broker", "topic", "reason").agg(*comparison_aggregates())
            .select(*COMPARISON_RECORD.field_names))


def comparison_aggregates() -> list[Column]:
    """The aggregates of `comparison` over a group of notices, named as its columns."""

    def total(value: Column) -> Column:  # a group has a row: the sum is never null
        return F.coalesce(F.sum(value), F.lit(0)).cast("long")

    receipts = [total(F.when(F.col("receipt") == r, 1).otherwise(0)).alias(r)
                for r in (IN_TIME, LATE, UNSUPPORTED)]
    summed = ("connection_paused_ms", "connection_paused_ms_without_notices", "stalled_topics",
              "stalled_topics_without_notices")
    return [F.count(F.lit(1)).alias("notices"), *receipts,
            total(F.col("pause_for_millis")).alias("pause_for_millis_total"),
            *[total(F.col(c)).alias(c) for c in summed]]
