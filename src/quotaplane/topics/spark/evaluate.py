"""The Spark transform: requests -> per-request decisions and final meters, one Arrow group per broker.

spec: kafka-topic-bytes-in-quota. The meters and the decisions are sequential per broker (a rate at
a tick depends on the bytes accepted before it), so each broker is one group. The requests cross one
shuffle by broker into one `mapInArrow` call per partition, which holds the partition's requests at
once, splits them by broker in numpy (no sort by broker in Spark) and judges each broker's in turn.
Only `broker_id, ts_ms, topic, bytes` cross Arrow into it; a group computes the thresholds
(`broker_thresholds`: the schedule looked up by bisection, and the broker's topic set) and the
meters and decisions (the numpy `kernel`: a loop over 5 s windows, vectorised inside; see its
docstring). A group holds one broker's requests of the run. The group works on the Arrow columns
themselves: the topic names are dictionary-encoded and taken back in Arrow, never turned into
Python strings.

The group function returns two kinds of rows in one schema (`row_kind`): requests (`REQUEST`, the
decisions) and meters (`METER`: per broker and per topic on it, counts and one-minute rates as of
`as_of_ms`, the threshold then, and the meter's creation time in `ts_ms`). A meter row's counts and
rates are two lists (`meter_counts`, `meter_rates`, null on a request row, so a request carries
no meter values); a kind's other unused columns hold 0. Decision, reason and threshold source are
small codes turned into their strings by `decisions` and `meters`, which split the kinds. The stage
does not run the groups twice, nor caches their output: `observe_meters` collects the meter rows
(a few per broker) to the driver while the decisions are written (`observed_meters`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import fields

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from quotaplane.core.ordering import nulls_first
from quotaplane.core.spark.codes import named
from quotaplane.core.spark.local_table import local_table
from quotaplane.topics.config import TopicQuotaConfig
from quotaplane.topics.engine.broker_thresholds import broker_thresholds
from quotaplane.topics.engine.decision import (
    DECISIONS,
    DEFAULT_SHARE,
    EXPLICIT,
    REASON_QUOTA,
    REASON_TOO_LARGE,
)
from quotaplane.topics.engine.evaluate import MeterSnapshot
from quotaplane.topics.engine.kernel import evaluate_broker, run_starts
from quotaplane.topics.engine.thresholds import ThresholdSchedule

TOTAL_SOURCE = "total"
REQUEST, METER = 0, 1  # row kinds
REASONS = (None, REASON_QUOTA, REASON_TOO_LARGE)  # by decision code
SOURCES = (DEFAULT_SHARE, EXPLICIT, TOTAL_SOURCE)  # by source code
METER_NAMES = ("bytes_in", "throttled_bytes_in", "error_bytes_in")
INPUT_COLUMNS = ("broker_id", "ts_ms", "topic", "bytes")
_ROW = T.StructType([
    T.StructField("row_kind", T.ByteType(), False),
    T.StructField("broker_id", T.LongType(), False),
    T.StructField("ts_ms", T.LongType(), False),
    T.StructField("topic", T.StringType(), True),
    T.StructField("bytes", T.LongType(), True),
    T.StructField("decision_code", T.ByteType(), True),
    T.StructField("total_threshold", T.LongType(), True),
    T.StructField("topic_threshold", T.LongType(), True),
    T.StructField("source_code", T.ByteType(), True),
    T.StructField("total_rate", T.DoubleType(), True),
    T.StructField("topic_rate", T.DoubleType(), True),
    # a meter row's counts and one-minute rates, in `METER_NAMES` order (null on a request row)
    T.StructField("meter_counts", T.ArrayType(T.LongType(), False), True),
    T.StructField("meter_rates", T.ArrayType(T.DoubleType(), False), True),
])
_ARROW = to_arrow_schema(_ROW)
_TOPIC = _ROW.fieldNames().index("topic")
DECISION_COLUMNS = ("ts_ms", "broker_id", "topic", "bytes", "decision", "reason", "total_rate", "topic_rate",
                    "total_threshold", "topic_threshold", "threshold_source")
# the meter rows are `MeterSnapshot`s, column for field
METER_COLUMNS = tuple(f.name for f in fields(MeterSnapshot))


def judge_brokers(config: TopicQuotaConfig, as_of_ms: int, partitions: int
                  ) -> Callable[[DataFrame], DataFrame]:
    """Requests (`INPUT_COLUMNS`) -> request and meter rows (see the module docstring), the brokers'
    groups in `partitions` partitions (the stage gives as many as its requests need:
    `stage.judging_tasks`)."""
    schedule = ThresholdSchedule(config)

    def partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        received = list(batches)
        if received:
            for broker in _brokers(pa.Table.from_batches(received)):
                yield from _judge_group(broker, config, schedule, as_of_ms).to_batches()

    def transform(rows: DataFrame) -> DataFrame:
        # a set number of partitions, which adaptive execution does not merge: a few merged
        # partitions of unequal size leave a core idle while the largest one finishes
        return rows.select(*INPUT_COLUMNS).repartition(partitions, "broker_id").mapInArrow(partition, _ROW)

    return transform


def _brokers(table: pa.Table) -> Iterator[pa.Table]:
    """A partition's requests, one table per broker (each in the order received)."""
    broker = table.column("broker_id").to_numpy()
    order = np.argsort(broker, kind="stable")
    table, broker = table.take(order), broker[order]
    starts = run_starts(broker)
    for start, end in zip(starts.tolist(), [*starts[1:].tolist(), len(broker)], strict=True):
        yield table.slice(start, end - start)


def evaluate_requests(config: TopicQuotaConfig, as_of_ms: int, partitions: int
                      ) -> Callable[[DataFrame], DataFrame]:
    """Used requests (`TOPIC_REQUESTS` columns) -> request and meter rows, in `partitions`
    partitions; `as_of_ms` must be at or after the last request (the run uses the last request's
    time)."""
    return judge_brokers(config, as_of_ms, partitions)


def decisions(rows: DataFrame) -> DataFrame:
    """The per-request decisions (`DECISION_COLUMNS`)."""
    return rows.where(F.col("row_kind") == REQUEST).select(
        "ts_ms", "broker_id", "topic", "bytes", named(F.col("decision_code"), DECISIONS).alias("decision"),
        named(F.col("decision_code"), REASONS).alias("reason"), "total_rate", "topic_rate",
        "total_threshold", "topic_threshold", named(F.col("source_code"), SOURCES).alias("threshold_source"))


def meters(rows: DataFrame) -> DataFrame:
    """The final meters (`METER_COLUMNS`; `topic` null for the broker-wide meters)."""
    return rows.where(F.col("row_kind") == METER).select(*_meter_columns())


def meter_table(spark: SparkSession, snapshots: Sequence[MeterSnapshot], schema: T.StructType) -> DataFrame:
    """`snapshots` as a table of `schema` (the schema of `meters`, whose columns are `METER_COLUMNS`),
    each column from its field, through Arrow (`local_table`)."""
    return local_table(spark, snapshots, schema)


def observe_meters(rows: DataFrame) -> tuple[DataFrame, Observation]:
    """`rows`, observed: the action that computes them also collects the meter rows (read them
    with `observed_meters` after it)."""
    observation = Observation("topic_meters")
    meter_rows = F.when(F.col("row_kind") == METER, F.struct(*_meter_columns()))
    return rows.observe(observation, F.collect_list(meter_rows).alias("meters")), observation


def observed_meters(observation: Observation) -> list[MeterSnapshot]:
    """The meters an action collected, by (broker_id, topic) (once each: a stage run again after a
    lost shuffle observes its tasks again)."""
    snapshots = {(r["broker_id"], r["topic"]): MeterSnapshot(**r.asDict())
                 for r in observation.get["meters"]}
    return [snapshots[k] for k in sorted(snapshots, key=lambda k: nulls_first(*k))]


def _meter_columns() -> list[Column]:
    return [F.col("broker_id"), F.col("topic"), F.col("ts_ms").alias("created_ms"),
            *[F.col(f"meter_{what}s")[i].alias(f"{meter}_{what}")
              for i, meter in enumerate(METER_NAMES) for what in ("count", "rate")],
            F.col("topic_threshold").alias("threshold"),
            named(F.col("source_code"), SOURCES).alias("threshold_source")]


def _judge_group(table: pa.Table, config: TopicQuotaConfig, schedule: ThresholdSchedule,
                 as_of_ms: int) -> pa.Table:
    """One broker's requests (an Arrow table of `INPUT_COLUMNS`) -> its request and meter rows
    (`_ROW`), in Arrow throughout: the topic names are encoded and taken back in Arrow, not as
    Python strings."""
    ts = table.column("ts_ms").to_numpy()
    order = np.argsort(ts, kind="stable")
    ts = ts[order]
    topics = table.column("topic").take(order)
    size = table.column("bytes").to_numpy()[order]
    broker_id = table.column("broker_id")[0].as_py()
    # codes by first appearance in time order, as the kernel's `_first_times` takes them
    encoded = pc.dictionary_encode(topics).combine_chunks()
    codes = encoded.indices.to_numpy().astype(np.int64)
    names = encoded.dictionary
    m = len(names)
    thresholds = broker_thresholds(schedule, ts, codes, names.to_pylist(), as_of_ms)
    result = evaluate_broker(ts, codes, size, thresholds.value, m, config.total_threshold,
                             config.message_max_bytes, as_of_ms)
    n = len(ts)
    columns: dict[str, np.ndarray] = {
        "row_kind": np.r_[np.full(n, REQUEST), np.full(m + 1, METER)],
        "broker_id": np.full(n + m + 1, broker_id),
        "ts_ms": np.r_[ts, ts[0], result.topic_created_ms],
        "bytes": np.r_[size, np.zeros(m + 1, np.int64)],
        "decision_code": np.r_[result.decision, np.zeros(m + 1, np.int8)],
        "total_threshold": np.full(n + m + 1, config.total_threshold),
        "topic_threshold": np.r_[thresholds.value, config.total_threshold, thresholds.final_value],
        "source_code": np.r_[thresholds.explicit, SOURCES.index(TOTAL_SOURCE), thresholds.final_explicit],
        "total_rate": np.r_[result.total_rate, np.zeros(m + 1)],
        "topic_rate": np.r_[result.topic_rate, np.zeros(m + 1)],
    }
    # each column in its type of `_ROW` (the codes' int8, the bytes' and thresholds' int64)
    arrays = {name: pa.array(values, type=_ARROW.field(name).type) for name, values in columns.items()}
    arrays["topic"] = pa.concat_arrays([*topics.chunks, pa.nulls(1, topics.type), names])
    # the names come back in the type Spark sent them (`large_string` under
    # `spark.sql.execution.arrow.useLargeVarTypes`), which is the type it expects back
    schema = _ARROW.set(_TOPIC, _ARROW.field(_TOPIC).with_type(topics.type))
    # the meters' values on the meter rows only: a request row's lists are null
    counts = np.r_[result.broker_count, result.topic_count.T.ravel()]
    rates = np.r_[result.broker_one_minute_rate, result.topic_one_minute_rate.T.ravel()]
    arrays["meter_counts"] = _meter_lists("meter_counts", counts, n, m + 1)
    arrays["meter_rates"] = _meter_lists("meter_rates", rates, n, m + 1)
    return pa.table([arrays[f.name] for f in _ROW.fields], schema=schema)


def _meter_lists(name: str, values: np.ndarray, requests: int, meters: int) -> pa.Array:
    """Column `name`: `requests` nulls, then a list of `len(METER_NAMES)` of `values` per meter row."""
    width = len(METER_NAMES)
    offsets = pa.array(np.r_[np.zeros(requests + 1, np.int32), np.arange(width, width * meters + 1, width,
                                                                         dtype=np.int32)],
                       mask=np.r_[np.ones(requests, bool), np.zeros(meters + 1, bool)])
    kind = _ARROW.field(name).type
    return pa.ListArray.from_arrays(offsets, pa.array(values, type=kind.value_type), type=kind)
