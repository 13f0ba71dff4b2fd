"""Producer traffic -> throttle notices, as a `DataFrame -> DataFrame` transform, and their comparison.

spec: pip-385-producer-throttle-protocol; rules in docs/notices.md. Notices are sequential per
broker (token buckets, pending requests, gating), so each broker is one `applyInPandas` group
evaluated by the numpy kernel `quotaplane.notices.engine.kernel.evaluate_broker`, which resolves
the limits of each distinct topic once (an event's limits depend on its topic alone): the events
cross to Python with only their own columns, not five more per event. Each group also sums its
notices (`aggregates`); the action that writes the notices observes those sums, which give the
`notice_comparison` rows (`quotaplane.notices.engine.evaluate.compare`) and the report's timeline.

Output schemas are declared once as record schemas: `NOTICE_RECORD` (the kernel's columns) and
`COMPARISON_RECORD`, turned into Spark types by `quotaplane.core.spark.schemas.spark_schema`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F
from pyspark.sql import types as T

from quotaplane.core.records import Field, RecordSchema
from quotaplane.core.spark.readers import REASON, CountedInUse, used_row
from quotaplane.core.spark.schemas import spark_schema
from quotaplane.notices.config import NoticeConfig
from quotaplane.notices.engine.evaluate import COMPARISON_COLUMNS
from quotaplane.notices.engine.kernel import NOTICE_RECORD, evaluate_broker
from quotaplane.notices.records import TRAFFIC_COLUMNS
from quotaplane.notices.spark.aggregates import AGGREGATES, broker_aggregates, merge

COMPARISON_RECORD = RecordSchema(
    name="notice_comparison",
    doc="Per (broker, topic, reason): the notices and what their pauses cost (docs/notices.md, Outputs).",
    fields=(Field("broker", "string"), Field("topic", "string"), Field("reason", "string"),
            *(Field(name, "long") for name in COMPARISON_COLUMNS[3:])),
)
NOTICE_SCHEMA = spark_schema(NOTICE_RECORD)
COMPARISON_SCHEMA = spark_schema(COMPARISON_RECORD)
_EVALUATED_SCHEMA = T.StructType([*NOTICE_SCHEMA.fields, T.StructField(AGGREGATES, T.StringType())])
NO_RECEIPT = -1  # `receipt_latency_ms` of an event with no receipt, in the kernel's input


def kernel_input(traffic: DataFrame) -> DataFrame:
    """Checked `producer_traffic` rows -> the kernel's input and REASON: the defaults of
    docs/notices.md (Input) applied in Spark, so that no long column handed to pandas holds a null
    (Arrow would make it a double); a missing receipt is `NO_RECEIPT`."""
    defaults = {"messages": F.lit(1).cast("long"), "supports_throttle": F.lit(False),
                "receipt_latency_ms": F.lit(NO_RECEIPT).cast("long"),
                "publish_latency_ms": F.lit(0).cast("long"), "broker": F.lit("")}
    return traffic.select(*[F.coalesce(F.col(c), defaults[c]).alias(c) if c in defaults else F.col(c)
                            for c in TRAFFIC_COLUMNS], REASON)


def evaluate_brokers(config: NoticeConfig, counted: CountedInUse) -> Callable[[DataFrame], DataFrame]:
    """Checked `producer_traffic` rows (with REASON) -> `notice_decisions` (`NOTICE_SCHEMA`) and
    `AGGREGATES`: one `applyInPandas` group per broker around the numpy kernel, over the used rows.
    The broker's last notice carries the text of its aggregates (`aggregates.broker_aggregates`),
    its other notices none; `observe_aggregates` gives the notices alone.

    The rows cross one shuffle, by broker; after it `counted` observes them, quarantined rows
    included, so the action that writes the notices also counts the input (no scan of its own)."""

    def group(pdf: pd.DataFrame) -> pd.DataFrame:
        out = evaluate_broker(config, pdf)
        for f in NOTICE_RECORD.fields:
            if f.type != "string" and out[f.name].dtype == object:
                raise ValueError(f"{f.name} of a notice of broker {out['broker'].iloc[0]!r} is beyond a LONG")
        texts = pd.Series(None, index=out.index, dtype=object)
        if len(out):
            texts.iloc[-1] = broker_aggregates(out)
        return out.assign(**{AGGREGATES: texts})

    def transform(traffic: DataFrame) -> DataFrame:
        # shuffled by broker as the groups need it, then counted
        rows = counted.observe(traffic.transform(kernel_input).repartition("broker"))
        return rows.where(used_row()).drop(REASON).groupBy("broker").applyInPandas(group, _EVALUATED_SCHEMA)

    return transform


def observe_aggregates(evaluated: DataFrame) -> tuple[DataFrame, Observation]:
    """`evaluate_brokers`' rows -> the notices (`NOTICE_SCHEMA`), observed: the action that computes
    them also collects each broker's aggregates (read them with `observed_aggregates` after it)."""
    observation = Observation("notice_aggregates")
    observed = evaluated.observe(observation, F.collect_list(AGGREGATES).alias("brokers"))
    return observed.drop(AGGREGATES), observation


def observed_aggregates(observation: Observation) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """The `notice_comparison` rows, the report's timeline rows and its bucket, from the brokers'
    aggregates an action observed (`aggregates.merge`)."""
    return merge(observation.get["brokers"])
