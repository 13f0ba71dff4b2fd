"""The backlog-quota stage of `quotaplane run` (spec: PIP-323).

Reads `backlog_snapshots`, evaluates every check tick against the policies with Spark, and writes
under `ctx.out_dir`:
- `backlog_checks/` (Parquet): one row per (tick, topic), with the cumulative eviction counters;
- `backlog_evictions/` (Parquet): what each eviction run would evict, per subscription;
- `backlog_topic_stats/`, `backlog_partitioned_stats/` (Parquet) and `backlog_topic_stats.json`:
  the PIP-323 topic stats fields at each topic's last tick;
- `quarantine/backlog_snapshots/` (Parquet): rejected rows with their reasons, when there are some.
It registers the PIP-323 metrics in `ctx.registry`, and provides `BacklogChecks` (the checks read
back from Parquet) to later stages.

One observation of `pulsar_storage_backlog_quota_check_duration_seconds` is the wall-clock time
of the Spark actions that evaluate every check of the run: materialising the per-tick checks
and the eviction rows (both cached, so the writes that follow reuse them).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from quotaplane.backlog.config import BacklogPolicies
from quotaplane.backlog.engine.model import SIZE, TIME
from quotaplane.backlog.engine.stats import TopicMetrics
from quotaplane.backlog.metrics import BacklogMetrics
from quotaplane.backlog.outputs import BacklogChecks
from quotaplane.backlog.report import build_sections
from quotaplane.backlog.spark.evaluate import checks_of, decided_rows, derive, evictions_of
from quotaplane.backlog.spark.reader import read_snapshots
from quotaplane.backlog.spark.report_data import collect_report_data
from quotaplane.core.policy import Outputs, StageContext, StageResult
from quotaplane.core.spark.readers import check_once

INPUT = "backlog_snapshots"
NAME = "backlog"


def run_stage(ctx: StageContext, policies: BacklogPolicies, outputs: Outputs) -> StageResult:
    """Evaluate the backlog quotas of the run; provide `BacklogChecks` in `outputs`."""
    path = ctx.find_input(INPUT)
    assert path is not None, "the runner runs a stage only when its input is present"
    with ctx.progress.step("backlog: read snapshots"):
        # checked once and cached (the group rules are window functions): the checks and the
        # evictions both read the snapshots
        snapshots = check_once(read_snapshots(ctx.spark, path), ctx.out_dir / "quarantine" / INPUT,
                               cache=True)
        counts = snapshots.counts
    decided = decided_rows(snapshots.used, policies)
    checks = checks_of(decided).cache()
    evictions = evictions_of(decided, policies).cache()
    with ctx.progress.step("backlog: check every tick"):
        start = time.perf_counter()
        checks.count()
        evictions.count()
        duration = time.perf_counter() - start
    snapshots.release()
    derived = derive(checks)
    with ctx.progress.step("backlog: write tables"):
        _write(checks, ctx.out_dir / "backlog_checks")
        _write(evictions, ctx.out_dir / "backlog_evictions")
        stats = derived.topic_stats.orderBy("topic").collect()
        parts = derived.partitioned_stats.orderBy("topic").collect()
        _write(derived.topic_stats, ctx.out_dir / "backlog_topic_stats")
        _write(derived.partitioned_stats, ctx.out_dir / "backlog_partitioned_stats")
        _write_stats_json(stats, parts, ctx.out_dir / "backlog_topic_stats.json")
    with ctx.progress.step("backlog: metrics and report"):
        metrics = _metrics(derived.topic_metrics, derived.namespace_metrics, policies, duration)
        ctx.registry.register(metrics)
        summary = _summary(checks, evictions, policies, duration, len(parts))
        kpis = [("check ticks", summary["ticks"]), ("topics", summary["topics"]),
                ("size exceeded (topic-ticks)", summary["size_exceeded"]),
                ("time exceeded (topic-ticks)", summary["time_exceeded"]),
                ("eviction runs size / time", f"{summary['size_evictions']} / {summary['time_evictions']}"),
                ("check duration (s)", round(duration, 2))]
        notes = [] if not counts.quarantined else [
            f"{counts.quarantined} snapshot rows were quarantined (quarantine/{INPUT})."]
        sections = build_sections(collect_report_data(checks, kpis, notes))
    summary["input"] = counts.as_dict()
    outputs.provide(BacklogChecks(ctx.spark.read.parquet(str(ctx.out_dir / "backlog_checks"))))
    console = [
        f"backlog: {summary['checks']:,} checks of {summary['topics']:,} topics over "
        f"{summary['ticks']:,} ticks; "
        f"exceeded size {summary['size_exceeded']:,}, time {summary['time_exceeded']:,}; "
        f"eviction runs size {summary['size_evictions']:,}, time {summary['time_evictions']:,}",
    ]
    return StageResult(NAME, summary, [counts], sections, console)


def _write(df: DataFrame, path: Path) -> None:
    df.write.mode("overwrite").parquet(str(path))


def _write_stats_json(stats: list[Any], parts: list[Any], path: Path) -> None:
    fields = ("backlogQuotaLimitSize", "backlogQuotaLimitTime", "oldestBacklogMessageAgeSeconds",
              "oldestBacklogMessageSubscriptionName")
    document = {
        "topics": {r["topic"]: {f: r[f] for f in fields} for r in stats},
        "partitionedTopics": {r["topic"]: {f: r[f] for f in fields} for r in parts},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def _rows(df: DataFrame) -> list[TopicMetrics]:
    return [TopicMetrics(**r.asDict()) for r in df.orderBy("namespace", "topic").collect()]


def _metrics(topic_metrics: DataFrame, namespace_metrics: DataFrame, policies: BacklogPolicies,
             duration: float) -> BacklogMetrics:
    """Per-topic rows when topic-level metrics are on; otherwise only the namespace rows are
    collected (the broker totals are the sums of either)."""
    broker = policies.broker
    namespaces = _rows(namespace_metrics)
    totals = {SIZE: sum(n.size_evictions for n in namespaces),
              TIME: sum(n.time_evictions for n in namespaces)}
    topics = _rows(topic_metrics) if broker.expose_topic_level_metrics else []
    return BacklogMetrics(broker.cluster_name, broker.expose_topic_level_metrics, topics, [duration],
                          namespaces=namespaces, broker_totals=totals)


def _summary(checks: DataFrame, evictions: DataFrame, policies: BacklogPolicies, duration: float,
             partitioned_topics: int) -> dict[str, Any]:
    row = checks.agg(
        F.count(F.lit(1)).alias("checks"), F.countDistinct("ts_ms").alias("ticks"),
        F.countDistinct("topic").alias("topics"),
        F.count(F.when(F.col("exceeded") == SIZE, 1)).alias("size_exceeded"),
        F.count(F.when(F.col("exceeded") == TIME, 1)).alias("time_exceeded"),
        F.count(F.when(F.col("eviction_run") & (F.col("exceeded") == SIZE), 1)).alias("size_evictions"),
        F.count(F.when(F.col("eviction_run") & (F.col("exceeded") == TIME), 1)).alias("time_evictions"),
        F.count(F.when(F.col("producers") == "held", 1)).alias("producers_held"),
        F.count(F.when(F.col("producers") == "failed", 1)).alias("producers_failed"),
    ).first()
    ev = evictions.agg(F.coalesce(F.sum("entries"), F.lit(0)).alias("entries"),
                       F.coalesce(F.sum("bytes"), F.lit(0)).alias("bytes")).first()
    out: dict[str, Any] = {k: int(v) for k, v in row.asDict().items()}
    out.update(partitioned_topics=partitioned_topics, evicted_entries_estimate=int(ev["entries"]),
               evicted_bytes_estimate=int(ev["bytes"]), check_duration_seconds=round(duration, 3),
               precise_time_check=policies.broker.precise_time_check,
               topic_level_metrics=policies.broker.expose_topic_level_metrics)
    return out
