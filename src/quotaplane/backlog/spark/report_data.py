"""The report's aggregates: the topic table from the collected per-topic totals
(`quotaplane.backlog.spark.topics`), and the plotted series and top holders of the oldest message
from ONE grouping-sets aggregation of the checks (per tick, per plotted topic and time bucket of at
most `MAX_POINTS` buckets, per topic and holder), collected small."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from quotaplane.backlog.engine.model import SIZE, TIME
from quotaplane.backlog.report import BacklogReportData
from quotaplane.backlog.spark.topics import Totals
from quotaplane.core.buckets import bucket_width
from quotaplane.core.ordering import descending

PLOTTED_TOPICS = 6
MAX_POINTS = 1500
TOP_HOLDERS = 15
TOPIC_COLUMNS = ("topic", "namespace", "ticks", "max_age", "time_limit", "size_limit", "max_size",
                 "size_exceeded_ticks", "time_exceeded_ticks", "latest_age", "latest_size",
                 "oldest_subscription", "size_evictions", "time_evictions", "age_usage")


def _column(values: list[Any], text: bool = False) -> pd.Series:
    """A column as Spark's `toPandas` gives it: whole numbers as int64, as float64 (NaN) with nulls."""
    if text:
        return pd.Series(values, dtype="object")
    return pd.Series(values, dtype="float64" if any(v is None for v in values) else "int64")


def _frame(rows: Sequence[dict[str, Any]], columns: Sequence[str], text: Sequence[str] = ()) -> pd.DataFrame:
    return pd.DataFrame({c: _column([r[c] for r in rows], c in text) for c in columns})


def topic_table(topics: Sequence[Totals]) -> pd.DataFrame:
    """One row per topic (see `BacklogReportData.topics`), most urgent first."""
    rows = []
    for t in topics:
        last, max_age, limit = t["last"], t["max_age"], t["time_limit"]
        rows.append({
            "topic": t["topic"], "namespace": last["namespace"], "ticks": t["ticks"], "max_age": max_age,
            "time_limit": limit, "size_limit": t["size_limit"], "max_size": t["max_size"],
            "size_exceeded_ticks": t["size_exceeded"], "time_exceeded_ticks": t["time_exceeded"],
            "latest_age": last["backlog_age_seconds"], "latest_size": last["backlog_size_bytes"],
            "oldest_subscription": last["oldest_subscription"], "size_evictions": t["size_evictions"],
            "time_evictions": t["time_evictions"],
            "age_usage": max_age / limit if limit > 0 and max_age is not None else None})
    rows.sort(key=lambda r: (*descending(r["age_usage"]), *descending(r["max_age"]), r["topic"]))
    frame = _frame(rows, TOPIC_COLUMNS[:-1], text=("topic", "namespace", "oldest_subscription"))
    frame["age_usage"] = pd.Series([r["age_usage"] for r in rows], dtype="float64")
    return frame


def series(checks: DataFrame, lo: int, hi: int, plotted: list[str]) -> list[Any]:
    """`series_frame`, collected (small: ticks, plotted buckets, topic holders)."""
    return series_frame(checks, lo, hi, plotted).collect()


def series_frame(checks: DataFrame, lo: int, hi: int, plotted: list[str]) -> DataFrame:
    """In one aggregation of the checks (`Evaluation.checks`, or the table written from them): per
    tick (`_tick` set) its bucket and eviction runs; per plotted topic and bucket the first tick,
    largest age and time limit; per topic and holder of the oldest message its ticks."""
    def runs(quota_type: str) -> Any:
        return F.count(F.when(F.col("eviction_run") & (F.col("exceeded") == quota_type), 1))

    width = bucket_width(lo, hi, MAX_POINTS)
    rows = checks.select(
        "ts_ms", "backlog_age_seconds", "time_limit", "eviction_run", "exceeded",
        F.floor((F.col("ts_ms") - F.lit(lo)) / F.lit(width)).alias("_bucket"),
        F.col("ts_ms").alias("_tick"), F.when(F.col("topic").isin(plotted), F.col("topic")).alias("_plotted"),
        F.col("topic").alias("_topic"), F.col("oldest_subscription").alias("_holder"))
    keys = ("_bucket", "_tick", "_plotted", "_topic", "_holder")
    sets = [("_bucket", "_tick"), ("_plotted", "_bucket"), ("_topic", "_holder")]
    return rows.groupingSets(sets, *keys).agg(
        F.grouping("_tick").alias("_no_tick"), F.grouping("_plotted").alias("_no_plotted"),
        F.min("ts_ms").alias("ts_ms"), F.max("backlog_age_seconds").alias("age"),
        F.max("time_limit").alias("time_limit"), F.count(F.lit(1)).alias("ticks"),
        runs(SIZE).alias("size_runs"), runs(TIME).alias("time_runs"))


def report_data(topics: pd.DataFrame, aggregates: list[Any], kpis: list[tuple[str, Any]],
                notes: list[str]) -> BacklogReportData:
    """The report's data from the topic table and the collected `series` rows."""
    ticks = [r.asDict() for r in aggregates if r["_no_tick"] == 0]
    buckets: dict[int, dict[str, Any]] = {}
    for t in ticks:
        b = buckets.setdefault(t["_bucket"], {"ts_ms": t["ts_ms"], "size_runs": 0, "time_runs": 0})
        b["ts_ms"] = min(b["ts_ms"], t["ts_ms"])
        b["size_runs"] += t["size_runs"]
        b["time_runs"] += t["time_runs"]
    evictions = _frame(list(buckets.values()), ("ts_ms", "size_runs", "time_runs"))
    ages = [{**r.asDict(), "topic": r["_plotted"]} for r in aggregates
            if r["_no_tick"] == 1 and r["_no_plotted"] == 0 and r["_plotted"] is not None]
    age_series = _frame(ages, ("topic", "ts_ms", "age", "time_limit"), text=("topic",))
    held = [{"topic": r["_topic"], "subscription": r["_holder"], "ticks": r["ticks"]} for r in aggregates
            if r["_no_tick"] == 1 and r["_no_plotted"] == 1 and r["_holder"] is not None]
    held.sort(key=lambda r: (-r["ticks"], r["topic"], r["subscription"]))
    holders = _frame(held[:TOP_HOLDERS], ("topic", "subscription", "ticks"), text=("topic", "subscription"))
    return BacklogReportData(kpis, topics, age_series, evictions, holders, notes)


def tick_count(aggregates: list[Any]) -> int:
    """How many distinct check ticks (rows of the per-tick set)."""
    return sum(1 for r in aggregates if r["_no_tick"] == 0)
