"""`quotaplane backlog evaluate`, run in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quotaplane import cli
from quotaplane.registry import POLICIES as REGISTERED

ROWS = [
    {"ts_ms": 200_000, "topic": "persistent://t/ns/b", "subscription": "s", "backlog_size_bytes": 5000,
     "backlog_entries": 50, "oldest_unacked_publish_ts_ms": 190_000},
    {"ts_ms": 100_000, "topic": "persistent://t/ns/b", "subscription": "s", "backlog_size_bytes": 10,
     "backlog_entries": 1, "oldest_unacked_publish_ts_ms": 30_000},
    {"ts_ms": 100_000, "topic": "persistent://t/ns/a-partition-0", "partitioned_topic": "persistent://t/ns/a",
     "subscription": "slow", "backlog_size_bytes": 10, "backlog_entries": 1,
     "oldest_unacked_publish_ts_ms": 99_000},
]
POLICIES = {
    "broker": {"preciseTimeBasedBacklogQuotaCheck": True, "clusterName": "east"},
    "namespaces": {"t/ns": {"destination_storage": {"limitSize": 1000, "policy": "consumer_backlog_eviction"},
                            "message_age": {"limitTime": 60, "policy": "producer_exception"}}},
}


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    snapshots = tmp_path / "snapshots.jsonl"
    snapshots.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n")
    policies = tmp_path / "policies.json"
    policies.write_text(json.dumps(POLICIES))
    return policies, snapshots


def test_the_command_is_registered() -> None:
    assert "backlog" in [p.name for p in REGISTERED]
    assert "evaluate" in cli.build_parser().parse_args(
        ["backlog", "evaluate", "--policies", "p", "--snapshots", "s"]).backlog_command


def test_evaluate_prints_one_line_per_tick_and_topic(files, capsys, tmp_path: Path) -> None:
    policies, snapshots = files
    stats, metrics = tmp_path / "out" / "stats.json", tmp_path / "out" / "metrics.prom"
    code = cli.main(["backlog", "evaluate", "--policies", str(policies), "--snapshots", str(snapshots),
                     "--stats", str(stats), "--metrics", str(metrics)])
    assert code == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(x["ts"], x["topic"]) for x in lines] == [
        (100_000, "persistent://t/ns/a-partition-0"), (100_000, "persistent://t/ns/b"),
        (200_000, "persistent://t/ns/b")]
    first_b = lines[1]
    assert {k: first_b[k] for k in ("backlog_size_bytes", "backlog_age_seconds", "oldest_subscription",
                                    "size_limit", "time_limit", "exceeded", "action")} == {
        "backlog_size_bytes": 10, "backlog_age_seconds": 70, "oldest_subscription": "s", "size_limit": 1000,
        "time_limit": 60, "exceeded": "time", "action": "producer_exception"}
    last = lines[2]
    assert (last["exceeded"], last["action"], last["size_evictions_total"]) == (
        "size", "consumer_backlog_eviction", 1)
    assert last["evictions"] == [{"subscription": "s", "entries": 41, "bytes": 4100}]
    assert lines[0]["exceeded"] is None and lines[0]["action"] is None
    document = json.loads(stats.read_text())
    assert document["topics"]["persistent://t/ns/b"] == {
        "backlogQuotaLimitSize": 1000, "backlogQuotaLimitTime": 60, "oldestBacklogMessageAgeSeconds": 10,
        "oldestBacklogMessageSubscriptionName": "s"}
    assert document["partitionedTopics"]["persistent://t/ns/a"]["oldestBacklogMessageAgeSeconds"] == 1
    text = metrics.read_text()
    evictions = "quotaplane_pulsar_storage_backlog_quota_exceeded_evictions_total"
    assert f'{evictions}{{cluster="east",namespace="t/ns",' in text
    assert 'quotaplane_pulsar_storage_backlog_quota_check_duration_seconds_count{cluster="east"} 1.0' in text


def test_bad_policies_exit_2_naming_the_key(files, capsys, tmp_path: Path) -> None:
    _, snapshots = files
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"namespaces": {"t/ns": {"message_age": {"limitTime": "x"}}}}))
    code = cli.main(["backlog", "evaluate", "--policies", str(bad), "--snapshots", str(snapshots)])
    assert code == 2
    err = capsys.readouterr().err
    assert "error: namespaces[t/ns].message_age.limitTime=x: must be a whole number" in err


def test_bad_snapshots_exit_2_naming_the_line_and_field(files, capsys, tmp_path: Path) -> None:
    policies, _ = files
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**ROWS[0], "backlog_size_bytes": -5}) + "\n")
    code = cli.main(["backlog", "evaluate", "--policies", str(policies), "--snapshots", str(bad)])
    assert code == 2
    err = capsys.readouterr().err
    assert "error: bad.jsonl:1: field 'backlog_size_bytes'=-5: backlog_size_bytes must not be negative" in err
