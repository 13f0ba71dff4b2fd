"""Attaching the quotas in force to each snapshot: topic over namespace over broker, per type.

The namespace and topic quotas of the configuration are looked up by key: a literal map (one JSON
literal) in the expression when the level has at most `MAP_LOOKUP_MAX` entries (no extra Spark job,
no join; the common case), otherwise a small broadcast table joined on the key (a lookup in a
literal map scans its keys). The broker defaults are literals. Partitions look up topic quotas under their
partitioned topic. Adds `namespace`, `size_limit`, `size_policy`, `size_level`, `time_limit`,
`time_policy`, `time_level` (limits as long).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from quotaplane.backlog.config import BacklogPolicies, QuotaSet
from quotaplane.backlog.names import NAMESPACE_PATTERN_JAVA
from quotaplane.core.spark.local_table import local_table

MAP_LOOKUP_MAX = 64
_WHAT = (("size_limit", T.LongType()), ("size_policy", T.StringType()), ("time_limit", T.LongType()),
         ("time_policy", T.StringType()))
_MAP_TYPE = T.MapType(T.StringType(), T.StructType([T.StructField(w, t, True) for w, t in _WHAT]))


def _values(q: QuotaSet) -> tuple[int | None, str | None, int | None, str | None]:
    return (q.size.limit if q.size else None, q.size.policy if q.size else None,
            q.time.limit if q.time else None, q.time.policy if q.time else None)


def _by_map(df: DataFrame, key: Column, prefix: str, quotas: Mapping[str, QuotaSet]) -> DataFrame:
    """Add `{prefix}_size_limit`, ... from a literal map keyed by `key` (null when absent): one JSON
    literal parsed once (constant-folded), whatever the number of entries."""
    if not quotas:
        return df.select("*", *[F.expr(f"CAST(NULL AS {t.simpleString()})").alias(f"{prefix}_{w}")
                                for w, t in _WHAT])
    text = json.dumps({name: dict(zip((w for w, _ in _WHAT), _values(q), strict=True))
                       for name, q in sorted(quotas.items())})
    found = F.from_json(F.lit(text), _MAP_TYPE.simpleString())[key]
    return df.select("*", *[found[w].alias(f"{prefix}_{w}") for w, _ in _WHAT])


def _by_join(df: DataFrame, key: str, prefix: str, quotas: Mapping[str, QuotaSet]) -> DataFrame:
    """Add the same columns with a broadcast join of a small local table on column `key`."""
    names = [f"{prefix}_{w}" for w, _ in _WHAT]
    rows = [{key: name, **dict(zip(names, _values(quotas[name]), strict=True))} for name in sorted(quotas)]
    schema = T.StructType([T.StructField(key, T.StringType(), False),
                           *[T.StructField(n, t, True) for n, (_, t) in zip(names, _WHAT, strict=True)]])
    return df.join(F.broadcast(local_table(df.sparkSession, rows, schema)), on=key, how="left")


def _lookup(df: DataFrame, key: str, prefix: str, quotas: Mapping[str, QuotaSet]) -> DataFrame:
    if len(quotas) <= MAP_LOOKUP_MAX:
        return _by_map(df, F.col(key), prefix, quotas)
    return _by_join(df, key, prefix, quotas)


def namespace_col(topic: Column) -> Column:
    return F.regexp_extract(topic, NAMESPACE_PATTERN_JAVA, 1)


def attach_quotas(policies: BacklogPolicies) -> Callable[[DataFrame], DataFrame]:
    """`df.transform(attach_quotas(policies))`."""

    def transform(df: DataFrame) -> DataFrame:
        defaults = policies.broker.default_quotas
        keyed = df.withColumns({"namespace": namespace_col(F.col("topic")),
                                "_policy_topic": F.coalesce(F.col("partitioned_topic"), F.col("topic"))})
        out = _lookup(keyed, "_policy_topic", "t", policies.topics)
        out = _lookup(out, "namespace", "n", policies.namespaces)
        in_force: dict[str, Column] = {}
        for kind, quota in (("size", defaults.size), ("time", defaults.time)):
            assert quota is not None
            t_limit, n_limit = F.col(f"t_{kind}_limit"), F.col(f"n_{kind}_limit")
            t_policy, n_policy = F.col(f"t_{kind}_policy"), F.col(f"n_{kind}_policy")
            in_force[f"{kind}_limit"] = F.coalesce(t_limit, n_limit, F.lit(quota.limit).cast("long"))
            in_force[f"{kind}_policy"] = F.coalesce(t_policy, n_policy, F.lit(quota.policy))
            in_force[f"{kind}_level"] = (F.when(t_limit.isNotNull(), F.lit("topic"))
                                         .when(n_limit.isNotNull(), F.lit("namespace"))
                                         .otherwise(F.lit("broker")))
        out = out.withColumns(in_force)
        quota_columns = [f"{level}_{w}" for level in "tn" for w, _ in _WHAT]
        return out.drop(*quota_columns, "_policy_topic")

    return transform
