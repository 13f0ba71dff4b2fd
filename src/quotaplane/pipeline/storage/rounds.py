"""Collection rounds in Spark (the rules of `quotaplane.policies.storage.rounds`, docs/telemetry.md).

A round is keyed by `ROUND` = (`cluster`, `is_window`, `round_no`): `round_no` is the `poll_id` of
marked rows, or the check interval window `floor(ts / interval_ms)` of unmarked rows (`ts` itself
when the interval is 0). A null cluster (a collection error naming no cluster, in telemetry that
names none) is carried as `NO_CLUSTER` so that it groups and joins like any other key.

All three inputs are put in one table and shuffled once by `ROUND`; every per-round quantity is
then a window function or an aggregation over that same partitioning (no further shuffle).
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
    clusters = (vols.select("cluster").union(members.select("cluster")).union(named.select("cluster"))
                .distinct())
    # an error naming no cluster applies to every cluster of the telemetry (or stays unnamed)
    unnamed = (errs.where(F.col("cluster").isNull()).drop("cluster")
               .join(F.broadcast(clusters), F.lit(True), "left").select(*vols.columns))
    return vols.union(members).union(named).union(unnamed).withColumn(
        "cluster", F.coalesce(F.col("cluster"), F.lit(NO_CLUSTER)))


def annotated_rows(volumes: DataFrame, membership: DataFrame, errors: DataFrame, interval_ms: int) -> DataFrame:
    """Every input row with its round and the round-level facts it needs, partitioned by `ROUND`.

    Added columns: `round_ts` (the round's time), `error` (its failure reason or null), `counted`
    (a volume row that is the round's observation of an active broker's log dir), `broker_row`
    (one row per broker present in the round), `active` (the broker is active in the round),
    `observed` (the broker has a volume row in the round), `active_brokers` (per round).
    """
    rows = _unified(volumes, membership, errors).transform(with_round(interval_ms)).repartition(*ROUND)
    by_round = Window.partitionBy(*ROUND)
    by_broker = Window.partitionBy(*ROUND, "broker_id")
    is_vol, is_member = F.col("kind") == VOLUME, F.col("kind") == MEMBER
    # the observation that counts for a (broker, log dir): latest ts, fewest available, fewest total
    latest = F.row_number().over(Window.partitionBy(*ROUND, "broker_id", "log_dir", "kind").orderBy(
        F.col("ts").desc(), "available_bytes", "total_bytes")) == 1
    rows = rows.select(
        "*",
        F.max("ts").over(by_round).alias("round_ts"),
        F.min(F.when(F.col("kind") == ERROR, F.struct("ts", "reason"))).over(by_round)["reason"].alias("error"),
        F.max(is_member).over(by_round).alias("round_listed"),
        F.max(is_member).over(by_broker).alias("listed"),
        F.max(is_vol).over(by_broker).alias("observed"),
        (is_vol & latest).alias("latest"),
        (F.col("broker_id").isNotNull()
         & (F.row_number().over(by_broker.orderBy("kind", "ts", "log_dir")) == 1)).alias("broker_row"),
    )
    active = F.col("listed") | (~F.col("round_listed") & F.col("observed"))
    rows = rows.select("*", (F.col("broker_id").isNotNull() & active).alias("active"))
    return rows.select(
        "*",
        (F.col("latest") & F.col("active")).alias("counted"),
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
