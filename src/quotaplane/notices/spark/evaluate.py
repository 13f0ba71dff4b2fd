"""Producer traffic -> throttle notices and their comparison, as `DataFrame -> DataFrame` transforms.

spec: pip-385-producer-throttle-protocol; rules in docs/notices.md. The limits of an event depend on
its topic alone, so they are column expressions (`with_limits`: the full topic name as Pulsar's
`TopicName` reads it, the partitioned topic's policy or its namespace's, the resource group, from
literal maps of the configuration). Notices are sequential per broker (token buckets, pending
requests, gating), so each broker is one `applyInPandas` group evaluated by the numpy kernel
`quotaplane.notices.engine.kernel.evaluate_broker`. `comparison` is the `notice_comparison` aggregate
(`quotaplane.notices.engine.evaluate.compare`).

Output schemas are declared once as record schemas: `NOTICE_RECORD` (the kernel's columns) and
`COMPARISON_RECORD`, turned into Spark types by `quotaplane.core.spark.schemas.spark_schema`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from quotaplane.core.records import Field, RecordSchema
from quotaplane.core.spark.schemas import spark_schema
from quotaplane.notices.config import NoticeConfig, PublishRate
from quotaplane.notices.engine.evaluate import COMPARISON_COLUMNS, IN_TIME, LATE, UNSUPPORTED
from quotaplane.notices.engine.kernel import LIMIT_COLUMNS, NOTICE_RECORD, evaluate_broker
from quotaplane.notices.records import DEFAULT_DOMAIN, DEFAULT_NAMESPACE, TRAFFIC_COLUMNS

COMPARISON_RECORD = RecordSchema(
    name="notice_comparison",
    doc="Per (broker, topic, reason): the notices and what their pauses cost (docs/notices.md, Outputs).",
    fields=(Field("broker", "string"), Field("topic", "string"), Field("reason", "string"),
            *(Field(name, "long") for name in COMPARISON_COLUMNS[3:])),
)
NOTICE_SCHEMA = spark_schema(NOTICE_RECORD)
COMPARISON_SCHEMA = spark_schema(COMPARISON_RECORD)
NO_RECEIPT = -1  # `receipt_latency_ms` of an event with no receipt, in the kernel's input
_RATE = T.StructType([T.StructField("bytes_per_s", T.LongType(), False),
                      T.StructField("messages_per_s", T.LongType(), False)])


def full_topic_name(topic: Column) -> Column:
    """`quotaplane.notices.records.normalise_topic` as a column."""
    return (F.when(topic.contains("://"), topic)
            .when(topic.contains("/"), F.concat(F.lit(f"{DEFAULT_DOMAIN}://"), topic))
            .otherwise(F.concat(F.lit(f"{DEFAULT_DOMAIN}://{DEFAULT_NAMESPACE}/"), topic)))


def _rates(rates: Mapping[str, PublishRate], key: Column) -> Column:
    """The rate of `key` in `rates` (a struct of `_RATE`), null when absent."""
    if not rates:
        return F.lit(None).cast(_RATE)
    entries = [c for name, rate in sorted(rates.items())
               for c in (F.lit(name), F.struct(F.lit(rate.bytes_per_s).cast("long").alias("bytes_per_s"),
                                               F.lit(rate.messages_per_s).cast("long").alias("messages_per_s")))]
    return F.create_map(*entries)[key]


def _names(names: Mapping[str, str], key: Column) -> Column:
    if not names:
        return F.lit(None).cast("string")
    return F.create_map(*[F.lit(v) for item in sorted(names.items()) for v in item])[key]


def with_limits(config: NoticeConfig) -> Callable[[DataFrame], DataFrame]:
    """Traffic -> the same rows with `topic` as its full name and the kernel's `LIMIT_COLUMNS`
    (docs/notices.md, Configuration: which rate applies to a topic; `NoticeConfig.topic_rate` and
    `NoticeConfig.resource_group`: a partition takes its partitioned topic's policy and group; a rate
    with neither limit set is no limiter)."""

    def limited(rate: Column) -> Column:
        return F.coalesce((rate["bytes_per_s"] > 0) | (rate["messages_per_s"] > 0), F.lit(False))

    def rate_of(rate: Column, field: str) -> Column:
        return F.when(limited(rate), rate[field]).otherwise(F.lit(0)).cast("long")

    def transform(traffic: DataFrame) -> DataFrame:
        others = [c for c in traffic.columns if c != "topic" and c not in LIMIT_COLUMNS]
        full = full_topic_name(F.col("topic"))
        partitioned = F.col("_partitioned")
        namespace = F.regexp_extract(partitioned, r"(?s)^.*?://(.*)/[^/]*\z", 1)
        topic_rate, group, group_rate = F.col("_topic_rate"), F.col("_group"), F.col("_group_rate")
        return (traffic
                .select(*others, full.alias("topic"))
                .withColumn("_partitioned", F.regexp_replace("topic", r"-partition-[0-9]+\z", ""))
                .withColumn("_topic_rate", F.coalesce(_rates(config.topic_rates, partitioned),
                                                      _rates(config.namespace_rates, namespace)))
                .withColumn("_group", _names(config.group_topics, partitioned))
                .withColumn("_group_rate", _rates(config.group_rates, group))
                .select(*others, "topic",
                        rate_of(topic_rate, "bytes_per_s").alias("topic_bytes_per_s"),
                        rate_of(topic_rate, "messages_per_s").alias("topic_messages_per_s"),
                        F.when(limited(group_rate), group).alias("resource_group"),
                        rate_of(group_rate, "bytes_per_s").alias("group_bytes_per_s"),
                        rate_of(group_rate, "messages_per_s").alias("group_messages_per_s")))

    return transform


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
        return (traffic.transform(kernel_input).transform(with_limits(config))
                .groupBy("broker").applyInPandas(group, NOTICE_SCHEMA))

    return transform


def comparison(notices: DataFrame) -> DataFrame:
    """`notice_decisions` -> `notice_comparison` (`COMPARISON_SCHEMA`): per (broker, topic, reason),
    the notices, their receipts and the sums of their pauses with and without notices."""

    def total(value: Column) -> Column:  # a group has a row: the sum is never null
        return F.coalesce(F.sum(value), F.lit(0)).cast("long")

    receipts = [total(F.when(F.col("receipt") == r, 1).otherwise(0)).alias(r)
                for r in (IN_TIME, LATE, UNSUPPORTED)]
    summed = ("connection_paused_ms", "connection_paused_ms_without_notices", "stalled_topics",
              "stalled_topics_without_notices")
    return (notices.groupBy("broker", "topic", "reason")
            .agg(F.count(F.lit(1)).alias("notices"), *receipts,
                 total(F.col("pause_for_millis")).alias("pause_for_millis_total"),
                 *[total(F.col(c)).alias(c) for c in summed])
            .select(*COMPARISON_RECORD.field_names))
