"""The Spark side: reading and quarantine, and the stage of `quotaplane run` end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quotaplane.backlog.policy import BacklogPolicy
from quotaplane.backlog.records import DUPLICATE_REASON, PARENT_CONFLICT_REASON
from quotaplane.backlog.spark.reader import read_snapshots
from quotaplane.core.errors import InputError
from quotaplane.core.exposition import render
from quotaplane.core.policy import RunConfigs
from quotaplane.core.report import render_report
from quotaplane.core.runner import run_pipeline
from tests.support.stages import run_policy_stage

A, B = "persistent://t/ns/a", "persistent://t/ns/b"
GOOD = {"ts_ms": 100_000, "topic": A, "subscription": "s", "backlog_size_bytes": 5000, "backlog_entries": 50,
        "oldest_unacked_publish_ts_ms": 10_000, "oldest_unacked_ledger_close_ts_ms": 20_000}
ROWS = [
    GOOD,
    {**GOOD, "subscription": "young", "oldest_unacked_publish_ts_ms": 90_000, "backlog_size_bytes": 10},
    {**GOOD, "ts_ms": 200_000},
    {**GOOD, "topic": B, "subscription": "x"},
    {**GOOD, "topic": B, "subscription": "x"},  # duplicate: both rows quarantined
    {**GOOD, "ts_ms": 300_000, "topic": B, "subscription": "y"},
    {**GOOD, "ts_ms": 300_000, "topic": B, "subscription": "z", "partitioned_topic": "persistent://t/ns/p"},
    {**GOOD, "subscription": "bad", "backlog_entries": 0},  # row rule
]
POLICIES = {"broker": {"backlogQuotaDefaultRetentionPolicy": "consumer_backlog_eviction",
                       "clusterName": "c1"},
            "namespaces": {"t/ns": {"destination_storage": {"limitSize": 1000}}}}


@pytest.fixture
def telemetry(tmp_path: Path) -> Path:
    folder = tmp_path / "telemetry"
    folder.mkdir()
    (folder / "backlog_snapshots.jsonl").write_text("\n".join(json.dumps(r) for r in ROWS) + "\n")
    (tmp_path / "policies.json").write_text(json.dumps(POLICIES))
    return folder


@pytest.mark.spark
def test_group_rules_quarantine_every_row_of_the_group(spark, telemetry: Path) -> None:
    snapshots = read_snapshots(spark, str(telemetry / "backlog_snapshots.jsonl"))
    counts = snapshots.counts()
    assert (counts.read, counts.used, counts.quarantined) == (8, 3, 5)
    reasons = sorted(r["reason"] for r in snapshots.quarantined.collect())
    assert reasons == sorted([DUPLICATE_REASON] * 2 + [PARENT_CONFLICT_REASON] * 2
                             + ["backlog_entries > 0 exactly when oldest_unacked_publish_ts_ms is set"])


@pytest.mark.spark
def test_the_stage_lists_the_files_spark_does_not_read(spark, tmp_path: Path) -> None:
    folder = tmp_path / "telemetry" / "backlog_snapshots"
    folder.mkdir(parents=True)
    (folder / "part-0.jsonl").write_text(json.dumps(GOOD) + "\n")
    (folder / "_late.jsonl").write_text(json.dumps({**GOOD, "ts_ms": 200_000}) + "\n")
    (tmp_path / "policies.json").write_text(json.dumps(POLICIES))
    _, result, _ = run_policy_stage(spark, BacklogPolicy(), folder.parent, tmp_path / "out",
                                    RunConfigs(backlog_policies=tmp_path / "policies.json"))
    assert result.summary["input"] == {"input": str(folder), "read": 1, "used": 1, "quarantined": 0,
                                       "reader": "spark", "skipped": [str(folder / "_late.jsonl")]}


@pytest.mark.spark
def test_the_stage_writes_tables_metrics_and_report(spark, telemetry: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    ctx, result, _ = run_policy_stage(spark, BacklogPolicy(), telemetry, out,
                                      RunConfigs(backlog_policies=tmp_path / "policies.json"))
    assert result.name == "backlog"
    s = result.summary
    assert (s["checks"], s["ticks"], s["topics"], s["size_exceeded"], s["size_evictions"]) == (2, 2, 1, 2, 2)
    assert s["input"] == {"input": str(telemetry / "backlog_snapshots.jsonl"), "read": 8, "used": 3,
                          "quarantined": 5, "reader": "spark"}
    checks = spark.read.parquet(str(out / "backlog_checks")).orderBy("ts_ms").collect()
    assert [(r.ts_ms, r.oldest_subscription, r.exceeded, r.size_evictions_total) for r in checks] == [
        (100_000, "s", "size", 1), (200_000, "s", "size", 2)]
    evictions = spark.read.parquet(str(out / "backlog_evictions")).orderBy("ts_ms").collect()
    assert [(r.subscription, r.entries, r.bytes) for r in evictions] == [("s", 41, 4100), ("s", 41, 4100)]
    stats = json.loads((out / "backlog_topic_stats.json").read_text())
    assert stats["topics"][A] == {"backlogQuotaLimitSize": 1000, "backlogQuotaLimitTime": -1,
                                  "oldestBacklogMessageAgeSeconds": 180,
                                  "oldestBacklogMessageSubscriptionName": "s"}
    assert spark.read.parquet(str(out / "quarantine" / "backlog_snapshots")).count() == 5
    text = render(ctx.registry)
    assert 'quotaplane_pulsar_storage_backlog_quota_exceeded_evictions_total{cluster="c1",namespace="t/ns",' \
           'quota_type="size",topic="persistent://t/ns/a"} 2.0' in text
    assert 'quotaplane_pulsar_storage_backlog_quota_check_duration_seconds_count{cluster="c1"} 1.0' in text
    html = render_report("r", "s", result.sections).replace("<wbr>", "")  # no line break hints
    assert "Backlog age against its limit" in html and "Who holds the oldest message" in html
    assert "data:image/png;base64" in html


def test_the_stage_does_not_run_without_its_input_or_policies(tmp_path: Path) -> None:
    assert BacklogPolicy().load_config(RunConfigs()) is None
    (tmp_path / "policies.json").write_text("{}")
    with pytest.raises(InputError, match="no policy could run"):
        run_pipeline(tmp_path, RunConfigs(backlog_policies=tmp_path / "policies.json"), tmp_path / "out",
                     [BacklogPolicy()], spark=object(), stream=None)
