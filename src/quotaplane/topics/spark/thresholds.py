"""Each request's topic threshold as of its time, with Spark column expressions and one window.

spec: kafka-topic-bytes-in-quota (Low level design, 1); the rules, and the schedule of settings in
force, are those of `quotaplane.topics.engine.thresholds.ThresholdSchedule`:

- explicit threshold: a broadcast join of the requests with the validity intervals
  `[from_ms, to_ms)` of every accepted explicit setting (a removal ends an interval);
- default share `(total - S) div (N - E)`: over one window per broker ordered by time, running sums
  of events that happen at or before each request: a topic joining the broker's topic set (+1 to N,
  at the earliest of its requests and its first accepted setting), and each accepted
  setting (its change to the explicit sum S and count E, replicated per broker, in effect order).
  Events sort before requests of the same millisecond, so a request sees every event at its time.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from quotaplane.topics.config import TopicQuotaConfig
from quotaplane.topics.engine.decision import DEFAULT_SHARE, EXPLICIT
from quotaplane.topics.engine.thresholds import ThresholdSchedule

THRESHOLD_COLUMNS = ("total_threshold", "topic_threshold", "threshold_source")

_INTERVALS = T.StructType([
    T.StructField("iv_topic", T.StringType(), False),
    T.StructField("from_ms", T.LongType(), False),
    T.StructField("to_ms", T.LongType(), True),
    T.StructField("explicit", T.LongType(), False),
])
_CONFIGURED = T.StructType([
    T.StructField("topic", T.StringType(), False),
    T.StructField("configured_ms", T.LongType(), False),
])
_DELTAS = T.StructType([
    T.StructField("ts_ms", T.LongType(), False),
    T.StructField("seq", T.LongType(), False),
    T.StructField("d_sum", T.LongType(), False),
    T.StructField("d_count", T.LongType(), False),
])


def with_thresholds(config: TopicQuotaConfig) -> Callable[[DataFrame], DataFrame]:
    """Rows with `broker_id, topic, ts_ms` -> the same rows plus `total_threshold`, `topic_threshold`,
    `threshold_source`. The brokers' topic sets are built from these rows (first row per broker and
    topic), so pass the requests (extra rows at later times of seen topics do not change them)."""

    def transform(rows: DataFrame) -> DataFrame:
        spark = rows.sparkSession
        columns = rows.columns
        schedule = ThresholdSchedule(config)
        intervals = spark.createDataFrame(schedule.explicit_intervals(), _INTERVALS)
        configured = spark.createDataFrame([(topic, ts) for ts, topic in schedule.configured], _CONFIGURED)
        deltas = spark.createDataFrame(schedule.deltas(), _DELTAS)

        brokers = rows.select("broker_id").distinct()
        candidates = rows.select("broker_id", "topic", "ts_ms").unionByName(
            brokers.crossJoin(F.broadcast(configured)).select(
                "broker_id", "topic", F.col("configured_ms").alias("ts_ms")))
        joins = (candidates.groupBy("broker_id", "topic").agg(F.min("ts_ms").alias("ts_ms"))
                 .select("broker_id", "ts_ms", F.lit(1).cast("long").alias("d_set")))
        events = joins.unionByName(brokers.crossJoin(F.broadcast(deltas)), allowMissingColumns=True)
        deltas_of = ("d_set", "d_sum", "d_count")
        zero = F.lit(0).cast("long")
        events = events.select("broker_id", "ts_ms", F.lit(0).alias("ord"),
                               F.coalesce("seq", zero).alias("seq"),
                               *[F.coalesce(c, zero).alias(c) for c in deltas_of])
        marked = rows.select("*", F.lit(1).alias("ord"), zero.alias("seq"),
                             *[zero.alias(c) for c in deltas_of])
        running = (Window.partitionBy("broker_id").orderBy("ts_ms", "ord", "seq")
                   .rowsBetween(Window.unboundedPreceding, Window.currentRow))
        counted = (marked.unionByName(events, allowMissingColumns=True)
                   .select("*", *[F.sum(c).over(running).alias(f"run_{c}") for c in deltas_of])
                   .where(F.col("ord") == 1))
        iv = F.broadcast(intervals)
        joined = counted.join(
            iv, (counted["topic"] == iv["iv_topic"]) & (counted["ts_ms"] >= iv["from_ms"])
            & (iv["to_ms"].isNull() | (counted["ts_ms"] < iv["to_ms"])), "left")
        share = F.expr(f"({config.total_threshold}L - run_d_sum) div nullif(run_d_set - run_d_count, 0)")
        return joined.select(
            *[F.col(c) for c in columns],
            F.lit(config.total_threshold).cast("long").alias("total_threshold"),
            F.coalesce(F.col("explicit"), share).alias("topic_threshold"),
            F.when(F.col("explicit").isNotNull(), F.lit(EXPLICIT)).otherwise(F.lit(DEFAULT_SHARE))
            .alias("threshold_source"),
        )

    return transform
