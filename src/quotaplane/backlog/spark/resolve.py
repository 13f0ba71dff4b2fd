"""Attaching the quotas in force to each snapshot: topic over namespace over broker, per type.

The namespace and topic quotas of the configuration become two small broadcast tables; the
broker defaults are literals. Partitions look up topic quotas under their partitioned topic.
Adds `namespace`, `size_limit`, `size_policy`, `size_level`, `time_limit`, `time_policy`,
`time_level` (limits as long).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from quotaplane.backlog.config import BacklogPolicies, QuotaSet
from quotaplane.backlog.names import NAMESPACE_PATTERN_JAVA


def _quota_table(spark: SparkSession, key: str, prefix: str, quotas: Mapping[str, QuotaSet]) -> DataFrame:
    schema = T.StructType([
        T.StructField(key, T.StringType(), False),
        T.StructField(f"{prefix}_size_limit", T.LongType(), True),
        T.StructField(f"{prefix}_size_policy", T.StringType(), True),
        T.StructField(f"{prefix}_time_limit", T.LongType(), True),
        T.StructField(f"{prefix}_time_policy", T.StringType(), True),
    ])
    rows = [(name,
             q.size.limit if q.size else None, q.size.policy if q.size else None,
             q.time.limit if q.time else None, q.time.policy if q.time else None)
            for name, q in sorted(quotas.items())]
    return spark.createDataFrame(rows, schema)


def namespace_col(topic: Column) -> Column:
    return F.regexp_extract(topic, NAMESPACE_PATTERN_JAVA, 1)


def attach_quotas(policies: BacklogPolicies) -> Callable[[DataFrame], DataFrame]:
    """`df.transform(attach_quotas(policies))`."""

    def transform(df: DataFrame) -> DataFrame:
        spark = df.sparkSession
        defaults = policies.broker.default_quotas
        topics = _quota_table(spark, "_policy_topic", "t", policies.topics)
        namespaces = _quota_table(spark, "namespace", "n", policies.namespaces)
        joined = (df.withColumn("namespace", namespace_col(F.col("topic")))
                  .withColumn("_policy_topic", F.coalesce(F.col("partitioned_topic"), F.col("topic")))
                  .join(F.broadcast(topics), on="_policy_topic", how="left")
                  .join(F.broadcast(namespaces), on="namespace", how="left"))
        out = joined
        for kind, quota in (("size", defaults.size), ("time", defaults.time)):
            assert quota is not None
            t_limit, n_limit = F.col(f"t_{kind}_limit"), F.col(f"n_{kind}_limit")
            t_policy, n_policy = F.col(f"t_{kind}_policy"), F.col(f"n_{kind}_policy")
            out = (out
                   .withColumn(f"{kind}_limit", F.coalesce(t_limit, n_limit, F.lit(quota.limit).cast("long")))
                   .withColumn(f"{kind}_policy", F.coalesce(t_policy, n_policy, F.lit(quota.policy)))
                   .withColumn(f"{kind}_level", F.when(t_limit.isNotNull(), F.lit("topic"))
                               .when(n_limit.isNotNull(), F.lit("namespace")).otherwise(F.lit("broker"))))
        quota_columns = [f"{level}_{kind}_{what}" for level in "tn" for kind in ("size", "time")
                  for what in ("limit", "policy")]
        return out.drop(*quota_columns, "_policy_topic")

    return transform
