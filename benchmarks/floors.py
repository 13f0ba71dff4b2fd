"""The floor of a policy's semantics: a hand-written minimal Spark job that does the work any job with
the same semantics must do, where the bare job (`benchmarks.baseline`) does less than that.

The bare job groups each input by the policy's key and time bucket, so Spark pre-aggregates a bucket's
rows before the shuffle: only one small row per bucket and task crosses it. These policies cannot
do that, and their floors show what that costs:

- storage: whether a volume row counts depends on the other rows of its collection round (a second
  observation of the volume, its broker in the membership rows), so every row crosses one shuffle
  by round and is deduplicated per (round, broker, kind, log dir) before the round is decided. The
  floor does exactly that with hash aggregates at three levels (key, broker, round) and writes a row
  per round with its active brokers and lowest available fraction. The stage's tie-break between two
  observations of a volume (latest, then fewest bytes) is simplified to per-column extremes: it costs
  no less shuffle.
- topics and notices: the meters and token buckets are sequential per broker, so every request
  crosses one shuffle by broker into one Python group per broker, in time order, and comes back as a
  decision row. The floor's group sorts the broker's rows by time and returns each with the broker's
  running bytes (`numpy.cumsum`), a row per request written.
- clients: the sampled rates and token buckets are sequential per (broker, quota type, metric tags),
  and every request gets its decision, so every request crosses one shuffle by broker into one
  Python group per broker. The floor's group orders the broker's rows by (quota type, user, client
  id, time), with the names as codes (`pandas.factorize`) and one `numpy.lexsort`, and returns each
  with the running value of its (quota type, user, client id), a row per request written. It stands
  for the metric tags the quota configuration resolves, which the stage works out once per distinct
  (type, user, client id).
- backlog: every snapshot crosses one shuffle by topic and one sort by (topic, tick, subscription);
  the floor takes the tick's largest backlog and a running count of ticks over a size limit with two
  windows in that order, and writes a row per (tick, topic).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

Paths = dict[str, str]  # input kind -> Parquet path


def _round(df: DataFrame, interval_ms: int) -> DataFrame:
    return df.withColumn("round_no", F.coalesce(F.col("poll_id"), F.floor(F.col("ts") / F.lit(interval_ms))))


def storage_floor(spark: SparkSession, paths: Paths, manifest: dict[str, Any]) -> DataFrame:
    interval_ms = int(manifest["arguments"]["interval_seconds"]) * 1000
    none_long, none_str = F.lit(None).cast("long"), F.lit(None).cast("string")
    volumes = _round(spark.read.parquet(paths["volumes"]), interval_ms).select(
        F.lit(0).cast("byte").alias("kind"), "cluster", "round_no", "broker_id", "log_dir", "ts",
        "available_bytes", "total_bytes")
    members = _round(spark.read.parquet(paths["membership"]), interval_ms).select(
        F.lit(1).cast("byte").alias("kind"), "cluster", "round_no", "broker_id", none_str.alias("log_dir"),
        "ts", none_long.alias("available_bytes"), none_long.alias("total_bytes"))
    errors = _round(spark.read.parquet(paths["collection_errors"]), interval_ms).select(
        F.lit(2).cast("byte").alias("kind"), "cluster", "round_no", none_long.alias("broker_id"),
        none_str.alias("log_dir"), "ts", none_long.alias("available_bytes"), none_long.alias("total_bytes"))
    rows = volumes.unionByName(members).unionByName(errors).repartition("cluster", "round_no")
    keys = rows.groupBy("cluster", "round_no", "broker_id", "kind", "log_dir").agg(
        F.max("ts").alias("ts"), F.min("available_bytes").alias("available_bytes"),
        F.min("total_bytes").alias("total_bytes"))
    is_volume = F.col("kind") == 0
    brokers = keys.groupBy("cluster", "round_no", "broker_id").agg(
        F.max(F.col("kind") == 1).alias("listed"), F.max(is_volume).alias("observed"),
        F.min(F.when(is_volume, F.col("available_bytes") / F.col("total_bytes"))).alias("fraction"),
        F.max(F.col("kind") == 2).alias("error"), F.max("ts").alias("ts"))
    listed, observed = F.col("listed"), F.col("observed")

    def over_active(agg: Callable[[Any], Any], col: Any) -> Any:
        return F.when(F.max(listed), agg(F.when(listed, col))).otherwise(agg(F.when(observed, col)))

    return brokers.groupBy("cluster", "round_no").agg(
        F.max("ts").alias("ts"), F.max("error").alias("error"),
        over_active(F.count, F.lit(1)).alias("active_brokers"),
        over_active(F.min, F.col("fraction")).alias("lowest_fraction"))


def running_in_order(pdf: pd.DataFrame, amount: str, per: tuple[str, ...] = ()) -> pd.DataFrame:
    """One key's rows ordered by (`per`, time), each with the running sum of `amount` over the rows
    of its `per` values so far (`running_<amount>`; over the whole group without `per`). The names
    in `per` are ordered as codes (`pandas.factorize`), the rows with one `numpy.lexsort`."""
    codes = [pd.factorize(pdf[name])[0] for name in per]
    order = np.lexsort((pdf["ts_ms"].to_numpy(np.int64), *reversed(codes)))
    out = pdf.iloc[order].reset_index(drop=True)
    running = np.cumsum(out[amount].to_numpy())
    if per:
        tags = np.stack([c[order] for c in codes])
        starts = np.flatnonzero(np.r_[True, (tags[:, 1:] != tags[:, :-1]).any(axis=0)])
        before = np.r_[0, running][starts]  # the running sum before each run of `per` values begins
        running = running - np.repeat(before, np.diff(np.r_[starts, len(out)]))
    out[f"running_{amount}"] = running
    return out


def _running(key: str, columns: tuple[str, ...], amount: str, per: tuple[str, ...] = ()
             ) -> Callable[[SparkSession, str], DataFrame]:
    """Every row into its `key`'s Python group, back in order with its running `amount`
    (`running_in_order`)."""
    def floor(spark: SparkSession, path: str) -> DataFrame:
        df = spark.read.parquet(path).select(key, *columns)
        running = T.StructField(f"running_{amount}", df.schema[amount].dataType, False)
        return df.groupBy(key).applyInPandas(lambda pdf: running_in_order(pdf, amount, per),
                                             T.StructType([*df.schema.fields, running]))

    return floor


_TOPICS = _running("broker_id", ("ts_ms", "topic", "bytes"), "bytes")
_NOTICES = _running("broker", ("ts_ms", "topic", "bytes", "messages"), "bytes")
_CLIENTS = _running("broker_id", ("ts_ms", "quota_type", "user", "client_id", "value"), "value",
                    per=("quota_type", "user", "client_id"))
BACKLOG_LIMIT_BYTES = 10 * 2**20  # the floor's size limit: any constant does the same work


def backlog_floor(spark: SparkSession, paths: Paths, manifest: dict[str, Any]) -> DataFrame:
    rows = spark.read.parquet(paths["backlog_snapshots"]).select(
        "topic", "ts_ms", "subscription", "backlog_size_bytes").repartition("topic")
    tick = Window.partitionBy("topic", "ts_ms")
    running = Window.partitionBy("topic").orderBy("ts_ms", "subscription")
    ticks = rows.select(
        "topic", "ts_ms", "subscription", F.max("backlog_size_bytes").over(tick).alias("backlog_size_bytes"),
        F.row_number().over(tick.orderBy("subscription")).alias("rank"))
    over = F.when(F.col("rank") == 1, F.col("backlog_size_bytes") > BACKLOG_LIMIT_BYTES).cast("int")
    return (ticks.select("*", F.sum(over).over(running).alias("ticks_over_limit"))
            .where(F.col("rank") == 1).drop("rank", "subscription"))


# policy -> its floor: (session, input paths, dataset manifest) -> the table to write
FLOORS: dict[str, Callable[[SparkSession, Paths, dict[str, Any]], DataFrame]] = {
    "storage": storage_floor,
    "clients": lambda spark, paths, _: _CLIENTS(spark, paths["client_requests"]),
    "topics": lambda spark, paths, _: _TOPICS(spark, paths["topic_requests"]),
    "notices": lambda spark, paths, _: _NOTICES(spark, paths["producer_traffic"]),
    "backlog": backlog_floor,
}


def floor_job(spark: SparkSession, policy: str, paths: Paths, manifest: dict[str, Any], out: Path) -> int:
    """Run `policy`'s floor job, writing Parquet to `out`; the number of rows written."""
    FLOORS[policy](spark, paths, manifest).write.mode("overwrite").parquet(str(out))
    return int(spark.read.parquet(str(out)).count())
