"""Collection rounds in Spark (the rules of `quotaplane.policies.storage.rounds`, docs/telemetry.md).

A round is keyed by `ROUND` = (`cluster`, `is_window`, `round_no`): `round_no` is the `poll_id` of
marked rows, or the check interval window `floor(ts / interval_ms)` of unmarked rows (`ts` itself
when the interval is 0). A null cluster (a collection error naming no cluster, in telemetry that
names none) is carried as `NO_CLUSTER` so that it groups and joins like any other key.

All three inputs are put in one table and shuffled once by `ROUND`; every per-round quantity is
then an aggregation or a window function over that same partitioning (no further shuffle).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

ROUND = ["cluster", "is_window", "round_no"]
NO_CLUSTER = "\u0000"
VOLUME, MEMBER, ERROR = "v", "m", "e"


def window_of(ts: str, interval_ms: int) -> Column:
    """`floor(ts / interval_ms)` in exact long arithmetic, or `ts` itself when the interval is 0."""
    if interval_ms <= 0:
        return F.col(ts)
    return F.expr(f"({ts} - pmod({ts}, {interval_ms}L)) div {interval_ms}L")


def with_round(interval_ms: int):
    """`DataFrame -> DataFrame` adding `is_window` and `round_no` from `poll_id` and `ts`."""

    def apply(df: DataFrame) -> DataFrame:
        return df.select(
            "*",
            F.col("poll_id").isNull().alias("is_window"),
            F.coalesce(F.col("poll_id"), window_of("ts", interval_ms)).alias("round_no"),
        )

    return apply


def _unified(volumes: DataFrame, membership: DataFrame, errors: DataFrame) -> DataFrame:
    """The three inputs as one table: `kind`, `ts`, `cluster`, `poll_id` and the fields of each."""
    none_long, none_str = F.lit(None).cast("long"), F.lit(None).cast("string")
    vols = volumes.select(F.lit(VOLUME).alias("kind"), "ts", "cluster", "poll_id", "broker_id", "log_dir",
                          "total_bytes", "available_bytes", none_str.alias("reason"))
    members = membership.select(F.lit(MEMBER).alias("kind"), "ts", "cluster", "poll_id", "broker_id",
                                none_str.alias("log_dir"), none_long.alias("total_bytes"),
                                none_long.alias("available_bytes"), none_str.alias("reason"))
    errs = errors.select(F.lit(ERROR).alias("kind"), "ts", "cluster", "poll_id", none_long.alias("broker_id"),
                         none_str.alias("log_dir"), none_long.alias("total_bytes"),
                         none_long.alias("available_bytes"), "reason")
    named = errs.where(F.col("cluster").isNotNull())
    unified = vols.union(members).union(named)
    if errors.where(F.col("cluster").isNull()).limit(1).count() > 0:  # a small input: a cheap check
        # an error naming no cluster applies to every cluster of the telemetry (or stays unnamed)
        clusters = (vols.select("cluster").union(members.select("cluster")).union(named.select("cluster"))
                    .distinct())
        unified = unified.union(errs.where(F.col("cluster").isNull()).drop("cluster")
                                .join(F.broadcast(clusters), F.lit(True), "left").select(*vols.columns))
    return unified.withColumn("cluster", F.coalesce(F.col("cluster"), F.lit(NO_CLUSTER)))


def annotated_rows(volumes: DataFrame, membership: DataFrame, errors: DataFrame,
                   interval_ms: int) -> DataFrame:
    """One row per (round, kind, broker, log dir) with the round-level facts it needs, partitioned
    by `ROUND`.

    Rows of one kind, broker and log dir in a round count once (`first_of_key`): a volume
    keeps its counted observation (latest `ts`, then fewest available, then fewest total bytes), a
    round's errors keep the earliest (`ts`, `reason`). Added columns: `round_ts` (the round's time),
    `error` (its failure reason or null), `listed`/`observed` (the broker has membership/volume rows
    in the round), `active`, `counted` (a volume of an active broker), `broker_row` (one row per
    broker of the round) and `active_brokers`. The window functions share one sort order.
    """
    rows = _unified(volumes, membership, errors).transform(with_round(interval_ms)).repartition(*ROUND)
    # One sort serves every window: the most specific order comes first.
    in_dir = Window.partitionBy(*ROUND, "broker_id", "kind", "log_dir").orderBy(
        F.col("ts").desc(), "available_bytes", "total_bytes")
    in_broker = Window.partitionBy(*ROUND, "broker_id").orderBy("kind", "log_dir")
    whole_broker = in_broker.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    by_round = Window.partitionBy(*ROUND)
    merged = (rows.select("*", (F.row_number().over(in_dir) == 1).alias("first_of_key"))
              .select("*", F.when(F.col("kind") == ERROR, F.struct("ts", "reason")).alias("err")))
    is_vol, is_member = F.col("kind") == VOLUME, F.col("kind") == MEMBER
    merged = merged.select(
        "*",
        F.max(is_member).over(whole_broker).alias("listed"),
        F.max(is_vol).over(whole_broker).alias("observed"),
        (F.col("broker_id").isNotNull() & (F.row_number().over(in_broker) == 1)).alias("broker_row"),
    ).select(
        "*",
        F.max("ts").over(by_round).alias("round_ts"),
        F.min("err").over(by_round)["reason"].alias("error"),
        F.max(is_member).over(by_round).alias("round_listed"),
    )
    active = F.col("broker_id").isNotNull() & (F.col("listed") | (~F.col("round_listed") & F.col("observed")))
    merged = merged.select("*", active.alias("active"))
    return merged.select(
        "*",
        (is_vol & F.col("active") & F.col("first_of_key")).alias("counted"),
        F.sum(F.when(F.col("broker_row") & F.col("active"), 1).otherwise(0)).over(by_round)
         .alias("active_brokers"),
    )


def round_summary(rows: DataFrame, *extra: Column) -> DataFrame:
    """One row per round: `round_ts`, `error`, `active_brokers`, `active_log_dirs`, `missing_brokers`,
    and the `extra` aggregates (over the same partitioning: no shuffle)."""
    broker = F.col("broker_row") & F.col("active")
    return rows.groupBy(*ROUND).agg(
        F.first("round_ts").alias("round_ts"),
        F.first("error").alias("error"),
        F.first("active_brokers").cast("long").alias("active_brokers"),
        F.count(F.when(F.col("counted"), 1)).alias("active_log_dirs"),
        F.count(F.when(broker & ~F.col("observed"), 1)).alias("missing_brokers"),
        *extra,
    )


def round_columns() -> list[Column]:
    """The round identity and time columns of a decision row, from the internal key."""
    return [
        F.timestamp_millis(F.col("round_ts")).alias("ts"),
        F.col("round_ts").alias("ts_ms"),
        F.when(F.col("cluster") != NO_CLUSTER, F.col("cluster")).alias("cluster"),
        F.when(~F.col("is_window"), F.col("round_no")).alias("poll_id"),
        F.when(F.col("is_window"), F.col("round_no")).alias("round_window"),
    ]
