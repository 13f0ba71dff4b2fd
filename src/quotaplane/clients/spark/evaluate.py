"""Per-request decisions in Spark: the sequential rate state of each sharing group.

spec: Kafka client quotas, the rules of `quotaplane.clients.engine.evaluate`.
The state (samples, token bucket) is sequential per (config, broker, quota type, metric tags), so the
recorded requests are grouped with `applyInPandas` (by config, broker, quota type and a bucket of
sharing groups) and each sharing group is evaluated by the numpy kernels of `kernels` (vectorised;
see there for the two loops that are not). Only numbers
cross into Python: names travel as the integer ids of the resolved keys and are joined back after
(converting strings to Python objects and back is what an `applyInPandas` row costs most). Requests
whose type Kafka does not record (no entity sets its quota) need no state and stay in column
expressions.

The storage throttle factor in force (produce, with the storage callback) is looked up inside the
group with `searchsorted` over the storage decisions, which are small (one row per storage
evaluation) and travel with the function.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from quotaplane.clients.engine import kernels
from quotaplane.clients.engine.quota_types import (
    CONTROLLER_MUTATION,
    FETCH,
    NANOS_TO_PERCENTAGE_PER_SECOND,
    PRODUCE,
    QUOTA_TYPES,
    QUOTA_VALUE_TYPES,
    REQUEST,
)
from quotaplane.clients.engine.settings import STRICT, ClientQuotaSettings
from quotaplane.clients.spark.resolution import KEY_COLUMNS
from quotaplane.core.javamath import math_round

# The sharing group: one sensor state per (config, broker, quota type, metric tags). Sharing groups
# are handed to Python in buckets (tag_id mod BUCKETS), so that many small groups do not each pay
# the fixed cost of a call; a call evaluates all its groups in one vectorised pass.
GROUP_COLUMNS = ["config_id", "broker_id", "type_code", "tag_id"]
BUCKETS = 16
SOURCES = (None, "client", "static")  # quota_source by its code in the Python stage

# What the per-group Python stage returns: numbers only (strings are joined back in the JVM).
GROUP_SCHEMA = T.StructType([
    T.StructField("config_id", T.LongType(), False),
    T.StructField("broker_id", T.LongType(), False),
    T.StructField("type_code", T.IntegerType(), False),
    T.StructField("key_id", T.IntegerType(), False),
    T.StructField("ts_ms", T.LongType(), False),
    T.StructField("value", T.DoubleType(), False),
    T.StructField("value_units", T.LongType(), False),
    T.StructField("quota_limit", T.DoubleType(), True),
    T.StructField("quota_level", T.IntegerType(), True),
    T.StructField("source_code", T.IntegerType(), False),
    T.StructField("throttle_factor", T.DoubleType(), True),
    T.StructField("rate", T.DoubleType(), True),
    T.StructField("window_ms", T.LongType(), True),
    T.StructField("tokens", T.DoubleType(), True),
    T.StructField("utilisation_pct", T.DoubleType(), True),
    T.StructField("violated", T.BooleanType(), False),
    T.StructField("throttled", T.BooleanType(), False),
    T.StructField("throttle_time_ms", T.IntegerType(), False),
    T.StructField("seq", T.LongType(), False),
    T.StructField("_file", T.LongType(), True),
    T.StructField("_row", T.LongType(), True),
])

# The per-request decisions (plus `quota_value` when the KIP-786 metric is on).
DECISION_COLUMNS = ["config_id", "broker_id", "quota_type", "tag_user", "tag_client_id", "ts_ms", "user",
                    "client_id", "value", "value_units", "recorded", "quota_limit", "quota_level",
                    "quota_source", "throttle_factor", "rate", "window_ms", "tokens", "utilisation_pct",
                    "violated", "throttled", "throttle_time_ms", "seq", "_file", "_row"]


@dataclass(frozen=True)
class FactorTable:
    """Storage decisions in decision order (ts, cluster before broker, smallest factor last)."""

    ts_ms: np.ndarray
    factor: np.ndarray
    observing_broker_id: np.ndarray  # -1 where the decision is cluster-wide
    cluster: np.ndarray

    @staticmethod
    def from_pandas(pdf: pd.DataFrame | None) -> FactorTable:
        if pdf is None or pdf.empty:
            empty = np.zeros(0)
            return FactorTable(empty.astype(np.int64), empty, empty.astype(np.int64), empty.astype(bool))
        ts = pdf["ts_ms"].to_numpy(dtype=np.int64)
        factor = pdf["throttle_factor"].to_numpy(dtype=np.float64)
        observing = (pdf["observing_broker_id"] if "observing_broker_id" in pdf
                     else pd.Series([None] * len(pdf), dtype=object))
        cluster = observing.isna().to_numpy()
        broker = np.where(cluster, -1, observing.fillna(-1).to_numpy(dtype=np.float64)).astype(np.int64)
        order = np.lexsort((-factor, (~cluster).astype(np.int64), ts))
        return FactorTable(ts[order], factor[order], broker[order], cluster[order])

    def for_broker(self, broker_id: int) -> tuple[np.ndarray, np.ndarray]:
        keep = self.cluster | (self.observing_broker_id == broker_id)
        return self.ts_ms[keep], self.factor[keep]


def units_of(quota_type: str, value: np.ndarray) -> np.ndarray:
    if quota_type == REQUEST:
        return math_round.array(value * 1e6)
    return value.astype(np.int64)


def group_function(settings: ClientQuotaSettings,
                   factors: FactorTable) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """The function each call runs (closes over the settings and the storage decisions).

    A call gets the requests of one or more sharing groups (`tag_id`) of one config, broker and
    quota type; each sharing group is evaluated on its own, in time order (sampled rates: all
    groups in one vectorised pass over one shifted timeline; controller mutations: group by group).
    """
    mutation_args = (settings.controller_mutation_mode == STRICT, settings.controller_window_num,
                     settings.controller_window_ms, settings.metrics_num_samples,
                     settings.metrics_sample_window_ms)

    def evaluate_groups(pdf: pd.DataFrame) -> pd.DataFrame:
        columns = {name: pdf[name].to_numpy() for name in pdf.columns}
        order = np.lexsort((columns["_row"], columns["_file"], columns["ts_ms"], columns["tag_id"]))
        columns = {name: array[order] for name, array in columns.items()}
        n = len(order)
        quota_type = QUOTA_TYPES[int(columns["type_code"][0])]
        t = columns["ts_ms"].astype(np.int64)
        value = columns["value"].astype(np.float64)
        units = units_of(quota_type, value)
        limit, source, factor = _limits(quota_type, int(columns["broker_id"][0]),
                                        columns["base_limit"].astype(np.float64), t)
        tag = columns["tag_id"]
        starts = np.flatnonzero(np.r_[True, tag[1:] != tag[:-1]])
        group = np.cumsum(np.r_[True, tag[1:] != tag[:-1]]) - 1
        seq = np.arange(n, dtype=np.int64) - starts[group]
        shifted = _one_timeline(t, group)
        if quota_type == CONTROLLER_MUTATION or shifted is None:
            result = _group_by_group(quota_type, t, units, limit, [*starts.tolist(), n])
        else:
            result = kernels.sampled_group(
                shifted, units, limit, settings.window_num, settings.window_ms,
                scale=NANOS_TO_PERCENTAGE_PER_SECOND if quota_type == REQUEST else 1.0,
                cap_ms=settings.request_max_throttle_ms if quota_type == REQUEST else None,
                unrecord=quota_type == FETCH, group_starts=starts)
        rate, window, tokens, violated, throttle = (result.rate, result.window_ms, result.tokens,
                                                     result.violated, result.throttle_ms)
        level = columns["quota_level"].astype(np.int64)
        return pd.DataFrame({
            "config_id": columns["config_id"], "broker_id": columns["broker_id"],
            "type_code": columns["type_code"], "key_id": columns["key_id"], "ts_ms": t, "value": value,
            "value_units": units, "quota_limit": limit,
            "quota_level": np.where(level > 0, level, np.nan),
            "source_code": source.astype(np.int32), "throttle_factor": factor,
            "rate": rate, "window_ms": window, "tokens": tokens,
            "utilisation_pct": kernels.utilisation(rate, limit),
            "violated": violated, "throttled": throttle > 0, "throttle_time_ms": throttle.astype(np.int32),
            "seq": seq, "_file": columns["_file"], "_row": columns["_row"],
        }, copy=False)

    def _one_timeline(t: np.ndarray, group: np.ndarray) -> np.ndarray | None:
        """The sharing groups' times laid end to end, each after a gap longer than any window and
        purge age, so that one pass over all of them evaluates each as if alone (only time
        differences matter to a sampled rate). None if that would not fit in a long."""
        if t.size == 0:
            return t
        low = int(t.min())
        gap = int(t.max()) - low + (settings.window_num + 2) * settings.window_ms
        if int(group[-1]) * gap + gap >= 2**62:
            return None
        return (t - low) + group * gap

    def _group_by_group(quota_type: str, t: np.ndarray, units: np.ndarray, limit: np.ndarray,
                        bounds: list[int]) -> kernels.GroupResult:
        parts = []
        for start, end in itertools.pairwise(bounds):
            part = slice(start, end)
            if quota_type == CONTROLLER_MUTATION:
                parts.append(kernels.mutation_group(t[part], units[part], float(limit[start]),
                                                    *mutation_args))
            else:
                parts.append(kernels.sampled_group(
                    t[part], units[part], limit[part], settings.window_num, settings.window_ms,
                    scale=NANOS_TO_PERCENTAGE_PER_SECOND if quota_type == REQUEST else 1.0,
                    cap_ms=settings.request_max_throttle_ms if quota_type == REQUEST else None,
                    unrecord=quota_type == FETCH))
        return kernels.GroupResult(*(np.concatenate([getattr(p, f) for p in parts])
                                     for f in ("rate", "window_ms", "tokens", "violated", "throttle_ms")))

    def _limits(quota_type: str, broker_id: int, base: np.ndarray,
                t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Effective limit (NaN: unlimited), source code and storage factor of each request."""
        has_client = ~np.isnan(base)
        if quota_type == PRODUCE and settings.storage_combined:
            times, values = factors.for_broker(broker_id)
            factor = kernels.factor_in_force(times, values, t)
            static = np.nan if settings.static_produce is None else settings.static_produce
            chosen = np.where(has_client, base, static)
            with np.errstate(invalid="ignore"):
                limit = np.where(np.isnan(chosen), np.where(factor == 0.0, 1.0, np.nan),
                                 np.maximum(chosen * factor, 1.0))
            return limit, np.where(has_client, 1, 2), factor
        return base, np.where(has_client, 1, 0), np.full(t.size, np.nan)

    return evaluate_groups


def _units_column() -> Column:
    value = F.col("value")
    scaled = value * F.lit(1e6)
    rounded = F.floor(scaled) + F.when(scaled - F.floor(scaled) >= 0.5, 1).otherwise(0)
    return F.when(F.col("quota_type") == REQUEST, rounded).otherwise(value.cast("long")).cast("long")


def evaluate_requests(requests: DataFrame, keys: DataFrame, settings: ClientQuotaSettings,
                      factors: FactorTable | None = None) -> DataFrame:
    """Per-request decisions (`DECISION_COLUMNS`, plus `quota_value` when the KIP-786 metric is on).

    `requests` has the telemetry fields plus `config_id`, `_file` and `_row` (longs: the input
    order, which breaks ties between requests of one group at the same millisecond); `keys` is
    `resolve.resolve_quotas` of them (small: it is broadcast, and read three times, so callers
    with large inputs persist it).
    """
    factors = factors or FactorTable.from_pandas(None)
    joined = requests.join(F.broadcast(keys), on=KEY_COLUMNS, how="inner")
    inputs = joined.where(F.col("recorded")).select(
        *GROUP_COLUMNS, "key_id", "ts_ms", "value", "base_limit",
        F.coalesce("quota_level", F.lit(0)).alias("quota_level"), "_file", "_row",
        F.pmod(F.col("tag_id"), F.lit(BUCKETS)).alias("_bucket"))
    groups = (inputs.groupBy("config_id", "broker_id", "type_code", "_bucket")
              .applyInPandas(group_function(settings, factors), GROUP_SCHEMA))
    names = keys.select("config_id", "type_code", "key_id", "quota_type", "user", "client_id", "tag_user",
                        "tag_client_id")
    source = F.col("source_code")
    recorded = groups.join(F.broadcast(names), on=["config_id", "type_code", "key_id"], how="inner").select(
        *[F.lit(True).alias(c) if c == "recorded" else
          F.when(source == 1, F.lit(SOURCES[1])).when(source == 2, F.lit(SOURCES[2])).alias(c)
          if c == "quota_source" else F.col(c) for c in DECISION_COLUMNS])
    unrecorded = joined.where(~F.col("recorded")).select(
        "config_id", "broker_id", "quota_type", "tag_user", "tag_client_id", "ts_ms", "user", "client_id",
        "value", _units_column().alias("value_units"), F.lit(False).alias("recorded"),
        F.col("base_limit").alias("quota_limit"), F.col("quota_level").cast("int").alias("quota_level"),
        F.when(F.col("base_limit").isNotNull(), F.lit("client")).alias("quota_source"),
        F.lit(None).cast("double").alias("throttle_factor"), F.lit(None).cast("double").alias("rate"),
        F.lit(None).cast("long").alias("window_ms"), F.lit(None).cast("double").alias("tokens"),
        F.lit(None).cast("double").alias("utilisation_pct"), F.lit(False).alias("violated"),
        F.lit(False).alias("throttled"), F.lit(0).cast("int").alias("throttle_time_ms"),
        F.lit(None).cast("long").alias("seq"), "_file", "_row",
    )
    out = recorded.unionByName(unrecorded)
    if settings.quota_value_metric:
        out = out.withColumn("quota_value", F.when(F.col("recorded") & F.col("quota_type").isin(
            *sorted(QUOTA_VALUE_TYPES)), F.col("quota_limit")))
    return out
