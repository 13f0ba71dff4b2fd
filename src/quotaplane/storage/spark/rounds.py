"""Collection rounds in Spark (the rules of `quotaplane.storage.engine.rounds`, docs/telemetry.md).

A round is keyed by `ROUND` = (`cluster`, `is_window`, `round_no`): `round_no` is the `poll_id` of
marked rows, or the check interval window `floor(ts / interval_ms)` of unmarked rows (`ts` itself
when the interval is 0). A null cluster (a collection error naming no cluster, in telemetry that
names none) is carried as `NO_CLUSTER` so that it groups and joins like any other key.

All three inputs are put in one table and shuffled once by `ROUND`, then aggregated per key (one
sort), per broker and per round; each level keys on `ROUND` plus a prefix of the one before, so
the later levels need no shuffle and no sort. Joins between the levels are on `ROUND` plus more
columns and need no shuffle either (the session sets
`spark.sql.requireAllClusterKeysForCoPartition=false`, see `pipeline.session`).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

ROUND = ["cluster", "is_window", "round_no"]
NO_CLUSTER = "\u0000"
VOLUME, MEMBER, ERROR = 0, 1, 2  # `kind`: a byte sorts, shuffles and caches cheaper than a string


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


def _kind(kind: int) -> Column:
    return F.lit(kind).cast("byte").alias("kind")


def _unified(volumes: DataFrame, membership: DataFrame, errors: DataFrame,
             unnamed_errors: bool | None = None) -> DataFrame:
    """The three inputs as one table: `kind`, `ts`, `cluster`, `poll_id` and the fields of each.
    `unnamed_errors`: whether an error names no cluster, when the caller knows (the storage stage
    takes it in the errors' counting scan); None asks Spark."""
    none_long, none_str = F.lit(None).cast("long"), F.lit(None).cast("string")
    vols = volumes.select(_kind(VOLUME), "ts", "cluster", "poll_id", "broker_id", "log_dir",
                          "total_bytes", "available_bytes", none_str.alias("reason"))
    members = membership.select(_kind(MEMBER), "ts", "cluster", "poll_id", "broker_id",
                                none_str.alias("log_dir"), none_long.alias("total_bytes"),
                                none_long.alias("available_bytes"), none_str.alias("reason"))
    errs = errors.select(_kind(ERROR), "ts", "cluster", "poll_id", none_long.alias("broker_id"),
                         none_str.alias("log_dir"), none_long.alias("total_bytes"),
                         none_long.alias("available_bytes"), "reason")
    named = errs.where(F.col("cluster").isNotNull())
    unified = vols.union(members).union(named)
    if unnamed_errors is None:  # a small input: a cheap check
        unnamed_errors = errors.where(F.col("cluster").isNull()).limit(1).count() > 0
    if unnamed_errors:
        # an error naming no cluster applies to every cluster of the telemetry (or stays unnamed)
        clusters = (vols.select("cluster").union(members.select("cluster")).union(named.select("cluster"))
                    .distinct())
        unified = unified.union(errs.where(F.col("cluster").isNull()).drop("cluster")
                                .join(F.broadcast(clusters), F.lit(True), "left").select(*vols.columns))
    return unified.withColumn("cluster", F.coalesce(F.col("cluster"), F.lit(NO_CLUSTER)))


def keyed_rows(volumes: DataFrame, membership: DataFrame, errors: DataFrame, interval_ms: int,
               unnamed_errors: bool | None = None) -> DataFrame:
    """One row per (round, kind, broker, log dir): the three inputs shuffled once by `ROUND`, then
    aggregated per key (a sort aggregation: its buffers hold structs), so that rows of one kind,
    broker and log dir in a round count once. A volume keeps its counted observation (latest `ts`,
    then fewest available, then fewest total bytes); a round's errors keep the earliest (`ts`,
    `reason`) as `err`; `ts` is the key's latest time. Every later aggregation keys on `ROUND`
    plus more columns: no further shuffle. `unnamed_errors`: see `_unified`."""
    rows = (_unified(volumes, membership, errors, unnamed_errors).transform(with_round(interval_ms))
            .repartition(*ROUND))
    newest = F.min(F.struct((-F.col("ts")).alias("neg_ts"), "available_bytes", "total_bytes"))
    # broker before kind: the aggregation's sort order then also serves `broker_summary`
    return rows.groupBy(*ROUND, "broker_id", "kind", "log_dir").agg(
        F.max("ts").alias("ts"),
        newest["available_bytes"].alias("available_bytes"),
        newest["total_bytes"].alias("total_bytes"),
        F.min(F.when(F.col("kind") == ERROR, F.struct("ts", "reason"))).alias("err"),
    )


def broker_summary(keys: DataFrame, *extra: Column) -> DataFrame:
    """One row per (round, broker): `listed`, `observed`, `log_dirs`, `used`, `ts`, `err` and the
    `extra` aggregates over the broker's keys (a volume's columns are null on other kinds' rows)."""
    is_vol = F.col("kind") == VOLUME
    return keys.groupBy(*ROUND, "broker_id").agg(
        (F.col("broker_id").isNotNull() & F.max(F.col("kind") == MEMBER)).alias("listed"),
        (F.col("broker_id").isNotNull() & F.max(is_vol)).alias("observed"),
        F.count(F.when(is_vol, 1)).alias("log_dirs"),
        F.sum(F.when(is_vol, F.col("total_bytes") - F.col("available_bytes"))).alias("used"),
        F.max("ts").alias("ts"),
        F.min("err").alias("err"),
        *extra,
    )


def over_active(agg, col: Column) -> Column:
    """An aggregate over the active brokers of a round, in a `groupBy(ROUND)` of `broker_summary`
    rows: the listed brokers when the round has membership rows, else the observed ones."""
    return F.when(F.max("listed"), agg(F.when(F.col("listed"), col))).otherwise(
        agg(F.when(F.col("observed"), col)))


def round_summary(brokers: DataFrame, *extra: Column) -> DataFrame:
    """One row per round from `broker_summary` rows: `round_ts` (its latest time), `error` (the
    reason of its earliest error), `round_listed`, `active_brokers`, `active_log_dirs`,
    `missing_brokers` (active brokers without volume rows), and the `extra` aggregates.

    A broker is active when it is listed, or, in a round without membership rows, observed.
    """
    listed, observed = F.col("listed"), F.col("observed")
    return brokers.groupBy(*ROUND).agg(
        F.max("ts").alias("round_ts"),
        F.min("err")["reason"].alias("error"),
        F.max(listed).alias("round_listed"),
        over_active(F.count, F.lit(1)).alias("active_brokers"),
        F.coalesce(over_active(F.sum, F.col("log_dirs")), F.lit(0).cast("long")).alias("active_log_dirs"),
        F.when(F.max(listed), F.count(F.when(listed & ~observed, 1))).otherwise(F.lit(0).cast("long"))
         .alias("missing_brokers"),
        *extra,
    )


def active_brokers(brokers: DataFrame) -> DataFrame:
    """The active brokers of every round (`broker_summary` rows) with the round's `round_ts`,
    `error`, `round_listed` and `active_brokers`: window functions over the round, in the order
    `broker_summary` leaves its rows in (no shuffle, no sort, no join)."""
    in_round = Window.partitionBy(*ROUND)
    listed, observed = F.col("listed"), F.col("observed")
    round_listed = F.max(listed).over(in_round)
    rows = brokers.select(
        *[c for c in brokers.columns if c not in ("ts", "err")],
        F.max("ts").over(in_round).alias("round_ts"),
        F.min("err").over(in_round)["reason"].alias("error"),
        round_listed.alias("round_listed"),
        F.when(round_listed, F.count(F.when(listed, 1)).over(in_round))
         .otherwise(F.count(F.when(observed, 1)).over(in_round)).alias("active_brokers"),
    )
    return rows.where(listed | (~F.col("round_listed") & observed))


def counted_volumes(keys: DataFrame) -> DataFrame:
    """The counted volume observations: one per (round, broker, log dir) of an active broker, with
    `round_ts` and `error`. One window over the round, in the order `keyed_rows` leaves its rows in
    (no shuffle, no sort, no join): a broker is listed when the round's set of member brokers holds
    it (`broker_id` is a required field, never null on volume and membership rows)."""
    in_round = Window.partitionBy(*ROUND)
    member = F.col("kind") == MEMBER
    rows = keys.select(*ROUND, "broker_id", "kind", "log_dir", "total_bytes", "available_bytes",
                       F.max(member).over(in_round).alias("round_listed"),
                       F.collect_set(F.when(member, F.col("broker_id"))).over(in_round).alias("members"),
                       F.max("ts").over(in_round).alias("round_ts"),
                       F.min("err").over(in_round)["reason"].alias("error"))
    listed = F.array_contains("members", F.col("broker_id"))
    counted = (F.col("kind") == VOLUME) & (listed | ~F.col("round_listed"))
    return rows.where(counted).select(*ROUND, "broker_id", "log_dir", "total_bytes", "available_bytes",
                                      "round_ts", "error")


def round_columns() -> list[Column]:
    """The round identity and time columns of a decision row, from the internal key."""
    return [
        F.timestamp_millis(F.col("round_ts")).alias("ts"),
        F.col("round_ts").alias("ts_ms"),
        F.when(F.col("cluster") != NO_CLUSTER, F.col("cluster")).alias("cluster"),
        F.when(~F.col("is_window"), F.col("round_no")).alias("poll_id"),
        F.when(F.col("is_window"), F.col("round_no")).alias("round_window"),
    ]
