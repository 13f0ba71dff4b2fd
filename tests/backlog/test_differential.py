"""The reference engine and the Spark pipeline agree exactly on generated telemetry.

Each hypothesis example is a fleet of independent scenarios (one namespace each) evaluated in
both time-check modes; every output of every mode is collected in ONE Spark job and compared with
the one differential harness.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import given, settings
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from quotaplane.backlog.config import BacklogPolicies
from quotaplane.backlog.engine.evaluate import evaluate
from quotaplane.backlog.engine.model import Snapshot
from quotaplane.backlog.engine.stats import namespace_metrics, partitioned_stats, topic_metrics, topic_stats
from quotaplane.backlog.engine.tables import CHECK_COLUMNS, EVICTION_COLUMNS, check_row, eviction_rows
from quotaplane.backlog.records import BACKLOG_SNAPSHOTS
from quotaplane.backlog.spark import topics as T
from quotaplane.backlog.spark.evaluate import decided_rows, evaluation
from quotaplane.core.spark.schemas import spark_schema
from quotaplane.core.spark.session import slot_partitions
from tests.backlog.strategies import fleet, with_precise
from tests.support.differential import Engines, assert_engines_agree

FIELDS = BACKLOG_SNAPSHOTS.field_names
CHECK_FIELDS = CHECK_COLUMNS
STATS_FIELDS = ("topic", "backlogQuotaLimitSize", "backlogQuotaLimitTime", "oldestBacklogMessageAgeSeconds",
                "oldestBacklogMessageSubscriptionName")
METRIC_FIELDS = ("namespace", "topic", "backlog_size_bytes", "backlog_age_seconds", "size_limit",
                 "time_limit", "size_evictions", "time_evictions")
EVICTION_FIELDS = EVICTION_COLUMNS


def reference_outputs(tag: str, policies: BacklogPolicies,
                      snapshots: Iterable[Snapshot]) -> dict[str, list[dict[str, Any]]]:
    results = evaluate(policies, snapshots)
    checks = [{"_tag": tag, **check_row(r)} for r in results]
    evictions = [{"_tag": tag, **row} for r in results for row in eviction_rows(r)]
    stats = [{"_tag": tag, "topic": t, **s.as_dict()} for t, s in topic_stats(results).items()]
    parts = [{"_tag": tag, "topic": t, **s.as_dict()} for t, s in partitioned_stats(results).items()]
    topics = topic_metrics(results)
    return {"checks": checks, "evictions": evictions, "stats": stats, "partitioned": parts,
            "topic_metrics": [{"_tag": tag, **m.__dict__} for m in topics],
            "namespace_metrics": [{"_tag": tag, **m.__dict__} for m in namespace_metrics(topics)]}


def spark_frames(tag: str, policies: BacklogPolicies, snapshots: DataFrame) -> dict[str, DataFrame]:
    """The stage's frames: the checks and evictions tables, and the per-topic totals (the stage
    collects them and builds the stats and metrics in Python, `derived`)."""
    # Lazily checkpointed (cached on first use, lineage cut), as the stage caches them: the outputs
    # share them inside the single collecting job instead of recomputing every window per output.
    rows = decided_rows(snapshots, policies, slot_partitions(snapshots.sparkSession))
    result = evaluation(rows.localCheckpoint(eager=False))
    frames = {"checks": result.checks.select(*CHECK_FIELDS),
              "evictions": result.evictions.select(*EVICTION_FIELDS),
              "totals": result.totals.select(F.to_json(F.struct("*")).alias("_totals"))}
    return {k: df.select(F.lit(tag).alias("_tag"), *df.columns) for k, df in frames.items()}


def derived(tag: str, totals: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The tables the stage builds in Python from the collected per-topic totals."""
    topics = T.checked(totals)
    stats = T.topic_stats(topics)
    metrics = T.topic_metrics(topics)
    tagged = lambda rows: [{"_tag": tag, **r} for r in rows]  # noqa: E731
    return {"stats": tagged({k: s[k] for k in STATS_FIELDS} for s in stats),
            "partitioned": tagged(T.partitioned_stats(stats)),
            "topic_metrics": tagged(m.__dict__ for m in metrics),
            "namespace_metrics": tagged(m.__dict__ for m in namespace_metrics(metrics))}


def reference_tables(policies: BacklogPolicies, rows: list[Snapshot]) -> dict[str, list[dict[str, Any]]]:
    """Every output of both time-check modes, tagged by mode."""
    expected: dict[str, list[dict[str, Any]]] = {}
    for precise in (True, False):
        tag = "precise" if precise else "estimate"
        for kind, out in reference_outputs(tag, with_precise(policies, precise), rows).items():
            expected.setdefault(kind, []).extend(out)
    return expected


def spark_tables(spark: Any, policies: BacklogPolicies, rows: list[Snapshot]) -> dict[str, Any]:
    """Every output of both time-check modes, tagged by mode: one union per output; the per-topic
    totals are collected first (one job) and turned into the stats and metric tables."""
    df = spark.createDataFrame([tuple(getattr(r, f) for f in FIELDS) for r in rows],
                               spark_schema(BACKLOG_SNAPSHOTS))
    frames: dict[str, DataFrame] = {}
    for precise in (True, False):
        tag = "precise" if precise else "estimate"
        for kind, frame in spark_frames(tag, with_precise(policies, precise), df).items():
            frames[kind] = frame if kind not in frames else frames[kind].unionByName(frame)
    tables: dict[str, Any] = {k: v for k, v in frames.items() if k != "totals"}
    totals: dict[str, list[dict[str, Any]]] = {"precise": [], "estimate": []}
    for row in frames["totals"].collect():
        totals[row["_tag"]].append(_totals(json.loads(row["_totals"])))
    for tag, rows_of_tag in totals.items():
        for kind, out in derived(tag, rows_of_tag).items():
            tables.setdefault(kind, []).extend(out)
    return tables


def _totals(record: dict[str, Any]) -> dict[str, Any]:
    """A totals row as the stage's `collect` gives it (`to_json` drops null fields)."""
    last = record.get("last")
    names = ("namespace", "partitioned_topic", "backlog_age_seconds", "backlog_size_bytes",
             "oldest_subscription", "size_limit", "time_limit", "ts_ms")
    out = {k: record.get(k) for k in ("topic", "ticks", "size_evictions", "time_evictions")}
    out["last"] = None if last is None else {k: last.get(k) for k in names}
    return out


ENGINES: Engines[BacklogPolicies, list[Snapshot]] = Engines(reference_tables, spark_tables)


@pytest.mark.spark
@settings(parent=settings.get_profile("differential"))
@given(fleet(scenarios=20))
def test_reference_and_spark_agree_on_every_output(spark, generated) -> None:
    policies, rows = generated
    assert_engines_agree(ENGINES, spark, policies, rows)
