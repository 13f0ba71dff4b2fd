"""Quota resolution in Spark: each request's metric tags, configured limit and precedence level.

spec: Kafka `DefaultQuotaCallback`, the rules of
`quotaplane.clients.engine.resolution`, as joins and column expressions:

1. The configuration becomes a table of (config_id, quota_type, entity, value) rows; a quota
   type's `quotaTypesEnabled` mask is the `bit_or` of its entities' level bits.
2. Each distinct (config_id, quota_type, user, client_id) of the requests is expanded to the eight
   entities its precedence levels look up and left-joined to the table, giving `v1`..`v8`.
   The configuration and the distinct keys (users x client ids x types) are small next to the
   requests, so those joins are broadcast.
3. Tags follow the mask (one kind of entity, or the walk through levels 1-6), the limit the first
   of the tier the tags name. The result is a small table of keys with integer ids, which
   `evaluate` joins to the requests (broadcast).

`config_id` lets one job evaluate several configurations side by side (one per scenario).
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from quotaplane.clients.engine.entities import DEFAULT, LEVELS, ClientQuotaConfig, Part
from quotaplane.clients.engine.quota_types import CONFIG_KEY, PRODUCE, QUOTA_TYPES

QUOTA_SCHEMA = T.StructType([
    T.StructField("config_id", T.LongType(), False),
    T.StructField("quota_type", T.StringType(), False),
    T.StructField("user_kind", T.StringType(), False),
    T.StructField("user_name", T.StringType(), False),
    T.StructField("client_kind", T.StringType(), False),
    T.StructField("client_name", T.StringType(), False),
    T.StructField("value", T.DoubleType(), False),
    T.StructField("level_bit", T.IntegerType(), False),
])

_LEVEL_SCHEMA = T.StructType([
    T.StructField("level", T.IntegerType(), False),
    T.StructField("user_kind", T.StringType(), False),
    T.StructField("user_named", T.BooleanType(), False),
    T.StructField("client_kind", T.StringType(), False),
    T.StructField("client_named", T.BooleanType(), False),
])

KEY_COLUMNS = ["config_id", "quota_type", "user", "client_id"]


def _kind(part: Part) -> tuple[str, str]:
    if part is None:
        return "none", ""
    if part is DEFAULT:
        return "default", ""
    return "name", str(part)


def quota_rows(config: ClientQuotaConfig, config_id: int = 0) -> list[tuple[object, ...]]:
    """The configuration as rows of `QUOTA_SCHEMA`."""
    rows = []
    for entity, values in config:
        user_kind, user_name = _kind(entity.user)
        client_kind, client_name = _kind(entity.client_id)
        for quota_type, key in CONFIG_KEY.items():
            if key in values:
                rows.append((config_id, quota_type, user_kind, user_name, client_kind, client_name,
                             float(values[key]), entity.level_bit))
    return rows


def quota_table(spark: SparkSession, configs: Mapping[int, ClientQuotaConfig]) -> DataFrame:
    """One table for several configurations, keyed by config id."""
    rows = [row for config_id, config in configs.items() for row in quota_rows(config, config_id)]
    return spark.createDataFrame(rows, QUOTA_SCHEMA)


def _levels(spark: SparkSession) -> DataFrame:
    rows = []
    for level, (user_shape, client_shape) in LEVELS.items():
        rows.append((level, user_shape or "none", user_shape == "name",
                     client_shape or "none", client_shape == "name"))
    return spark.createDataFrame(rows, _LEVEL_SCHEMA)


def _first(pairs: list[tuple[Column, int]]) -> Column:
    """The level of the first non-null value in `pairs`, or null."""
    expr = F.lit(None).cast("int")
    for value, level in reversed(pairs):
        expr = F.when(value.isNotNull(), F.lit(level)).otherwise(expr)
    return expr


def resolve_keys(keys: DataFrame, quotas: DataFrame, storage_combined: bool) -> DataFrame:
    """Tags, limit and level for distinct (config_id, quota_type, user, client_id) keys."""
    spark = keys.sparkSession
    cand = keys.crossJoin(F.broadcast(_levels(spark))).select(
        *KEY_COLUMNS, "level", "user_kind", "client_kind",
        F.when(F.col("user_named"), F.col("user")).otherwise(F.lit("")).alias("user_name"),
        F.when(F.col("client_named"), F.col("client_id")).otherwise(F.lit("")).alias("client_name"),
    )
    entity = ["config_id", "quota_type", "user_kind", "user_name", "client_kind", "client_name"]
    joined = cand.join(F.broadcast(quotas.select(*entity, "value")), on=entity, how="left")
    found = joined.groupBy(*KEY_COLUMNS).agg(
        *[F.max(F.when(F.col("level") == level, F.col("value"))).alias(f"v{level}") for level in LEVELS])
    masks = quotas.groupBy("config_id", "quota_type").agg(F.bit_or("level_bit").alias("mask"))
    res = found.join(F.broadcast(masks), on=["config_id", "quota_type"], how="left").fillna({"mask": 0})

    v = {level: F.col(f"v{level}") for level in LEVELS}
    user, client, mask = F.col("user"), F.col("client_id"), F.col("mask")
    multi_user = F.when(F.coalesce(*[v[i] for i in range(1, 7)]).isNotNull(), user).otherwise(F.lit(""))
    multi_client = (F.when(v[1].isNotNull() | v[2].isNotNull(), client)
                    .when(v[3].isNotNull(), F.lit(""))
                    .when(v[4].isNotNull() | v[5].isNotNull(), client)
                    .when(v[6].isNotNull(), F.lit(""))
                    .otherwise(client))
    tag_user = (F.when(mask.isin(0, 1), F.lit("")).when(mask == 2, user).when(mask == 4, user)
                .otherwise(multi_user))
    tag_client = (F.when(mask.isin(0, 1), client).when(mask == 2, F.lit("")).when(mask == 4, client)
                  .otherwise(multi_client))
    res = res.withColumn("tag_user", tag_user).withColumn("tag_client_id", tag_client)

    has_user = F.col("tag_user") != ""
    has_client = F.col("tag_client_id") != ""
    tiers = [
        (has_user & has_client, [(v[1], 1), (v[2], 2), (v[4], 4), (v[5], 5)]),
        (has_user & ~has_client, [(v[3], 3), (v[6], 6)]),
        (~has_user & has_client, [(v[7], 7), (v[8], 8)]),
    ]
    limit = F.lit(None).cast("double")
    level = F.lit(None).cast("int")
    for condition, pairs in reversed(tiers):
        limit = F.when(condition, F.coalesce(*[p[0] for p in pairs])).otherwise(limit)
        level = F.when(condition, _first(pairs)).otherwise(level)
    recorded = (mask != 0) | ((F.col("quota_type") == PRODUCE) & F.lit(bool(storage_combined)))
    type_code = F.lit(None).cast("int")
    for code, quota_type in reversed(list(enumerate(QUOTA_TYPES))):
        type_code = F.when(F.col("quota_type") == quota_type, F.lit(code)).otherwise(type_code)
    by_type = Window.partitionBy("config_id", "quota_type")
    return res.select(
        *KEY_COLUMNS, "tag_user", "tag_client_id", limit.alias("base_limit"), level.alias("quota_level"),
        recorded.alias("recorded"), type_code.alias("type_code"),
        F.dense_rank().over(by_type.orderBy("user", "client_id")).alias("key_id"),
        F.dense_rank().over(by_type.orderBy("tag_user", "tag_client_id")).alias("tag_id"),
    )


def request_keys(requests: DataFrame) -> DataFrame:
    """The distinct (config_id, quota_type, user, client_id) of the requests."""
    return requests.select(*KEY_COLUMNS).distinct()


def resolve_quotas(requests: DataFrame, quotas: DataFrame, storage_combined: bool) -> DataFrame:
    """The resolved keys of `requests` (see `resolve_keys`): a small table, one row per distinct
    (config_id, quota_type, user, client_id), with `tag_user`, `tag_client_id`, `base_limit` (the
    configured quota, null: none), `quota_level` (1-8, null), `recorded` (the type's usage is
    recorded), `type_code` (index in `QUOTA_TYPES`), and `key_id` / `tag_id`: dense ids of the key
    and of its metric tags within (config_id, quota_type), so that the per-group Python stage sees
    only numbers."""
    return resolve_keys(request_keys(requests), quotas, storage_combined)
