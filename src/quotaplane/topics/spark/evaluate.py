"""The Spark transform: requests -> per-request decisions and final meters, one pandas group per broker.

spec: kafka-topic-bytes-in-quota. Thresholds are column expressions (`thresholds`); the meters and
the decisions are sequential per broker (a rate at a tick depends on the bytes accepted before it),
so each broker is one `applyInPandas` group, evaluated by the numpy `kernel` (a loop over 5 s
windows, vectorised inside; see its docstring). A group holds one broker's requests of the run.

The group function returns two kinds of rows in one schema (`row_kind`): `request` rows (the
decisions) and `meter` rows (per broker and per topic on it: counts and one-minute rates as of
`as_of_ms`, the threshold then, and the meter's creation time in `ts_ms`). `decisions` and `meters`
split them. The threshold as of `as_of_ms` comes from a probe row per (broker, topic) at that time,
passed through the threshold transform with the requests.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from quotaplane.topics.config import TopicQuotaConfig
from quotaplane.topics.engine.decision import DECISIONS, REASON_QUOTA, REASON_TOO_LARGE
from quotaplane.topics.engine.kernel import evaluate_broker
from quotaplane.topics.spark.thresholds import with_thresholds

TOTAL_SOURCE = "total"
_ROW = T.StructType([
    T.StructField("row_kind", T.StringType(), False),
    T.StructField("broker_id", T.LongType(), False),
    T.StructField("ts_ms", T.LongType(), False),
    T.StructField("topic", T.StringType(), True),
    T.StructField("bytes", T.LongType(), True),
    T.StructField("total_threshold", T.LongType(), True),
    T.StructField("topic_threshold", T.LongType(), True),
    T.StructField("threshold_source", T.StringType(), True),
    T.StructField("decision", T.StringType(), True),
    T.StructField("reason", T.StringType(), True),
    T.StructField("total_rate", T.DoubleType(), True),
    T.StructField("topic_rate", T.DoubleType(), True),
    *[T.StructField(f"{meter}_{what}", kind, True)
      for meter in ("bytes_in", "throttled_bytes_in", "error_bytes_in")
      for what, kind in (("count", T.LongType()), ("rate", T.DoubleType()))],
])
DECISION_COLUMNS = ("ts_ms", "broker_id", "topic", "bytes", "decision", "reason", "total_rate", "topic_rate",
                    "total_threshold", "topic_threshold", "threshold_source")
METER_COLUMNS = ("broker_id", "topic", "created_ms", "bytes_in_count", "bytes_in_rate",
                 "throttled_bytes_in_count", "throttled_bytes_in_rate", "error_bytes_in_count",
                 "error_bytes_in_rate", "threshold", "threshold_source")
_DTYPES = {T.LongType(): "Int64", T.DoubleType(): "Float64", T.StringType(): object}


def with_probes(as_of_ms: int) -> Callable[[DataFrame], DataFrame]:
    """Requests -> requests (`probe` false) plus one probe row per (broker, topic) at `as_of_ms`."""

    def transform(requests: DataFrame) -> DataFrame:
        probes = (requests.select("broker_id", "topic").distinct()
                  .select(F.lit(as_of_ms).cast("long").alias("ts_ms"), "broker_id", "topic",
                          F.lit(None).cast("long").alias("bytes"), F.lit(True).alias("probe")))
        return requests.select("ts_ms", "broker_id", "topic", "bytes", F.lit(False).alias("probe")) \
            .unionByName(probes)

    return transform


def judge_brokers(config: TopicQuotaConfig, as_of_ms: int) -> Callable[[DataFrame], DataFrame]:
    """Thresholded requests and probes -> `request` and `meter` rows (see the module docstring)."""

    def group(pdf: pd.DataFrame) -> pd.DataFrame:
        return _judge_group(pdf, config, as_of_ms)

    def transform(rows: DataFrame) -> DataFrame:
        return rows.groupBy("broker_id").applyInPandas(group, _ROW)

    return transform


def evaluate_requests(config: TopicQuotaConfig, as_of_ms: int) -> Callable[[DataFrame], DataFrame]:
    """Used requests (`TOPIC_REQUESTS` columns) -> `request` and `meter` rows; `as_of_ms` must be at
    or after the last request (the run uses the last request's time)."""

    def transform(requests: DataFrame) -> DataFrame:
        return (requests.transform(with_probes(as_of_ms))
                .transform(with_thresholds(config))
                .transform(judge_brokers(config, as_of_ms)))

    return transform


def decisions(rows: DataFrame) -> DataFrame:
    """The per-request decisions (`DECISION_COLUMNS`)."""
    return rows.where(F.col("row_kind") == "request").select(*DECISION_COLUMNS)


def meters(rows: DataFrame) -> DataFrame:
    """The final meters (`METER_COLUMNS`; `topic` null for the broker-wide meters)."""
    return rows.where(F.col("row_kind") == "meter").select(
        "broker_id", "topic", F.col("ts_ms").alias("created_ms"),
        *METER_COLUMNS[3:9], F.col("topic_threshold").alias("threshold"), "threshold_source")


def _judge_group(pdf: pd.DataFrame, config: TopicQuotaConfig, as_of_ms: int) -> pd.DataFrame:
    probe = pdf["probe"].to_numpy(dtype=bool)
    req = pdf[~probe].sort_values("ts_ms", kind="stable")
    probes = pdf[probe]
    broker_id = int(pdf["broker_id"].iloc[0])
    codes, names = pd.factorize(req["topic"], sort=False)
    result = evaluate_broker(
        req["ts_ms"].to_numpy(np.int64), codes.astype(np.int64), req["bytes"].to_numpy(np.int64),
        req["topic_threshold"].to_numpy(np.int64), len(names), config.total_threshold,
        config.message_max_bytes, as_of_ms)
    n, m = len(req), len(names)
    reason = np.array([None, REASON_QUOTA, REASON_TOO_LARGE], dtype=object)[result.decision]
    requests = {
        "row_kind": ["request"] * n, "broker_id": [broker_id] * n, "ts_ms": req["ts_ms"].to_numpy(np.int64),
        "topic": req["topic"].to_numpy(object), "bytes": req["bytes"].to_numpy(np.int64),
        "total_threshold": req["total_threshold"].to_numpy(np.int64),
        "topic_threshold": req["topic_threshold"].to_numpy(np.int64),
        "threshold_source": req["threshold_source"].to_numpy(object),
        "decision": np.array(DECISIONS, dtype=object)[result.decision], "reason": reason,
        "total_rate": result.total_rate, "topic_rate": result.topic_rate,
    }
    at_end = probes.set_index("topic")
    topic_names = np.asarray(names, dtype=object)
    meters = {
        "row_kind": ["meter"] * (m + 1), "broker_id": [broker_id] * (m + 1),
        "ts_ms": np.r_[int(req["ts_ms"].iloc[0]), result.topic_created_ms],
        "topic": np.r_[np.array([None], dtype=object), topic_names],
        "total_threshold": [config.total_threshold] * (m + 1),
        "topic_threshold": np.r_[config.total_threshold,
                                 at_end.loc[topic_names, "topic_threshold"].to_numpy(np.int64)],
        "threshold_source": np.r_[np.array([TOTAL_SOURCE], dtype=object),
                                  at_end.loc[topic_names, "threshold_source"].to_numpy(object)],
    }
    for i, meter in enumerate(("bytes_in", "throttled_bytes_in", "error_bytes_in")):
        meters[f"{meter}_count"] = np.r_[result.broker_count[i], result.topic_count[i]]
        meters[f"{meter}_rate"] = np.r_[result.broker_one_minute_rate[i], result.topic_one_minute_rate[i]]
    frames = [_frame(requests, n), _frame(meters, m + 1)]
    return pd.concat(frames, ignore_index=True)


def _frame(columns: dict[str, object], rows: int) -> pd.DataFrame:
    """All output columns in order, typed (nullable), absent ones null."""
    data = {}
    for f in _ROW.fields:
        values = columns.get(f.name)
        dtype = _DTYPES[f.dataType]
        data[f.name] = pd.Series([None] * rows if values is None else values, dtype=dtype)
    return pd.DataFrame(data)
