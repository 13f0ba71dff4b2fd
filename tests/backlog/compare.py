"""Turning reference results and Spark rows into the same comparable tuples."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from quotaplane.backlog.config import BacklogPolicies
from quotaplane.backlog.engine.evaluate import evaluate
from quotaplane.backlog.engine.model import Snapshot
from quotaplane.backlog.engine.stats import namespace_metrics, partitioned_stats, topic_metrics, topic_stats
from quotaplane.backlog.spark.evaluate import checks_of, decided_rows, derive, evictions_of

CHECK_FIELDS = ("ts_ms", "topic", "namespace", "partitioned_topic", "backlog_size_bytes", "backlog_entries",
                "backlog_age_seconds", "oldest_subscription", "size_limit", "time_limit", "size_policy",
                "time_policy", "size_level", "time_level", "exceeded", "action", "producers", "eviction_run",
                "size_evictions_total", "time_evictions_total")
STATS_FIELDS = ("topic", "backlogQuotaLimitSize", "backlogQuotaLimitTime", "oldestBacklogMessageAgeSeconds",
                "oldestBacklogMessageSubscriptionName")
METRIC_FIELDS = ("namespace", "topic", "backlog_size_bytes", "backlog_age_seconds", "size_limit",
                 "time_limit", "size_evictions", "time_evictions")
EVICTION_FIELDS = ("ts_ms", "topic", "quota_type", "subscription", "entries", "bytes")


def reference_outputs(tag: str, policies: BacklogPolicies, snapshots: Iterable[Snapshot]) -> dict[str, list]:
    results = evaluate(policies, snapshots)
    checks = []
    for r in results:
        q = r.quotas
        checks.append((tag, r.ts_ms, r.topic, r.namespace, r.partitioned_topic, r.backlog_size_bytes,
                       r.backlog_entries, r.backlog_age_seconds, r.oldest_subscription, q.size_limit,
                       q.time_limit, q.size_policy, q.time_policy, q.size_level, q.time_level, r.exceeded,
                       r.action, r.producers, r.eviction_run, r.size_evictions_total, r.time_evictions_total))
    evictions = [(tag, r.ts_ms, r.topic, r.exceeded, e.subscription, e.entries, e.bytes)
                 for r in results for e in r.evictions]
    stats = [(tag, t, *s.as_dict().values()) for t, s in topic_stats(results).items()]
    parts = [(tag, t, *s.as_dict().values()) for t, s in partitioned_stats(results).items()]
    topics = topic_metrics(results)
    metric_rows = [(tag, *m.__dict__.values()) for m in topics]
    ns_rows = [(tag, *m.__dict__.values()) for m in namespace_metrics(topics)]
    return {"checks": checks, "evictions": evictions, "stats": stats, "partitioned": parts,
            "topic_metrics": metric_rows, "namespace_metrics": ns_rows}


def spark_frames(tag: str, policies: BacklogPolicies, snapshots: DataFrame) -> dict[str, DataFrame]:
    # Lazily checkpointed (cached on first use, lineage cut): the outputs of one evaluation share
    # them inside the single collecting job instead of recomputing every window per output.
    decided = decided_rows(snapshots, policies).localCheckpoint(eager=False)
    checks = checks_of(decided).localCheckpoint(eager=False)
    derived = derive(checks)
    frames = {"checks": checks.select(*CHECK_FIELDS), "evictions": evictions_of(decided, policies)
              .select(*EVICTION_FIELDS), "stats": derived.topic_stats.select(*STATS_FIELDS),
              "partitioned": derived.partitioned_stats.select(*STATS_FIELDS),
              "topic_metrics": derived.topic_metrics.select(*METRIC_FIELDS),
              "namespace_metrics": derived.namespace_metrics.select(*METRIC_FIELDS)}
    return {k: df.select(F.lit(tag).alias("_tag"), *df.columns) for k, df in frames.items()}


def collect_all(frames: list[dict[str, DataFrame]]) -> dict[str, list[tuple[Any, ...]]]:
    """Collect every output of every tagged evaluation in ONE Spark job (rows as JSON strings)."""
    parts = []
    for tagged in frames:
        for kind, df in tagged.items():
            parts.append(df.select(F.lit(kind).alias("kind"),
                                   F.to_json(F.array(*[F.col(c).cast("string") for c in df.columns]))
                                   .alias("row")))
    union = parts[0]
    for p in parts[1:]:
        union = union.unionByName(p)
    out: dict[str, list] = {kind: [] for tagged in frames for kind in tagged}
    for row in union.collect():
        out[row["kind"]].append(json.loads(row["row"]))
    return {kind: sorted(rows, key=_key) for kind, rows in out.items()}


def as_strings(rows: list[tuple]) -> list[list[str | None]]:
    """The reference tuples in the form `collect_all` returns (every value as Spark's string)."""
    def text(v: Any) -> str | None:
        if v is None:
            return None
        if isinstance(v, bool):
            return "true" if v else "false"
        return str(v)

    return sorted([[text(v) for v in row] for row in rows], key=_key)


def _key(row: list[str | None]) -> list[str]:
    return ["\0" if v is None else v for v in row]
