"""The `quotaplane run` stage of producer throttle notices, end to end on a small telemetry directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quotaplane.core.exposition import render
from quotaplane.core.policy import RunConfigs
from quotaplane.core.telemetry_files import read_input
from quotaplane.notices.config import load_notice_config
from quotaplane.notices.engine.evaluate import compare, evaluate
from quotaplane.notices.policy import NoticesPolicy
from quotaplane.notices.records import PRODUCER_TRAFFIC
from quotaplane.notices.report import NoticeReportData, build_sections, report_data_from_notices
from quotaplane.notices.spark import stage as notice_stage
from tests.support.differential import assert_rows_equal
from tests.support.stages import run_policy_stage

pytestmark = pytest.mark.spark

CONFIG = """\
topic.public/default/a.publishMaxByteRate=1000
resourcegroup.g.publishRateInBytes=3000
resourcegroup.g.topics=b,c
maxPendingPublishRequestsPerConnection=3
"""


@pytest.fixture
def telemetry(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "telemetry").mkdir()
    good = [{"ts_ms": t, "connection_id": f"c{t // 100 % 3}", "producer_id": t // 40 % 3,
             "topic": "abc"[t // 40 % 3], "bytes": 300, "supports_throttle": t % 200 == 0,
             "receipt_latency_ms": (t // 10) % 150 if t % 400 else None, "publish_latency_ms": 40,
             "broker": f"b{t // 1000 % 2}"} for t in range(0, 4000, 10)]
    lines = [json.dumps(r) for r in good] + [json.dumps({**good[0], "bytes": -1})]
    (tmp_path / "telemetry" / "producer_traffic.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "good.jsonl").write_text("\n".join(json.dumps(r) for r in good) + "\n")
    config = tmp_path / "notices.properties"
    config.write_text(CONFIG)
    return config, tmp_path / "good.jsonl"


def test_stage_writes_the_reference_tables_metrics_summary_and_report(spark, tmp_path: Path, telemetry,
                                                                      monkeypatch) -> None:
    config_path, good = telemetry
    out = tmp_path / "out"
    drawn: list[NoticeReportData] = []

    def capture(data: NoticeReportData):
        drawn.append(data)
        return build_sections(data)

    monkeypatch.setattr(notice_stage, "build_sections", capture)
    ctx, result, _ = run_policy_stage(spark, NoticesPolicy(), tmp_path / "telemetry", out,
                                      RunConfigs(notices=config_path))
    expected = evaluate(load_notice_config(config_path), read_input(good, PRODUCER_TRAFFIC))
    reasons = {n.reason for n in expected}
    assert {"TopicProduceQuotaExceeded", "ResourceGroupProduceQuotaExceeded",
            "ConnectionPendingMessagesBreach"} <= reasons
    assert_rows_equal([n.as_dict() for n in expected], spark.read.parquet(str(out / "notice_decisions")),
                      label="notice_decisions")
    assert_rows_equal(compare(expected), spark.read.parquet(str(out / "notice_comparison")),
                      label="notice_comparison")
    summary = result.summary
    assert summary["input"] == {"input": str(tmp_path / "telemetry" / "producer_traffic.jsonl"), "read": 401,
                                "used": 400, "quarantined": 1, "reader": "spark"}
    # counted by the action that writes the notices; the quarantined row written after it
    quarantine = spark.read.parquet(str(out / "quarantine" / "producer_traffic")).collect()
    assert [(q["reason"], json.loads(q["row"])["bytes"]) for q in quarantine] == [
        ("bytes must not be negative", -1)]
    assert summary["notices"] == len(expected)
    assert summary["connection_paused_ms_without_notices"] == sum(
        n.connection_paused_ms_without_notices for n in expected)
    assert sum(summary["by_receipt"].values()) == len(expected)
    text = render(ctx.registry)
    assert "quotaplane_producer_throttle_notices_total{" in text
    assert "quotaplane_pulsar_broker_topic_publish_rate_limit_count_total{" in text
    assert [s.title for s in result.sections] == ["Producer throttle notices (PIP-385)"]
    # the report's timeline: its bucket from the notices' span (observed while they were written)
    # and its rows in order, as the reference builds them from the notices
    reference = report_data_from_notices(expected)
    (data,) = drawn
    assert data.bucket_ms == reference.bucket_ms
    assert data.timeline.to_dict("records") == reference.timeline.to_dict("records")
    assert result.console[0].startswith(f"notices: {len(expected):,} throttle notices from 400 publish")


def test_no_usable_traffic_gives_empty_tables(spark, tmp_path: Path) -> None:
    (tmp_path / "telemetry").mkdir()
    (tmp_path / "telemetry" / "producer_traffic.jsonl").write_text(
        '{"ts_ms": 0, "connection_id": "", "producer_id": 1, "topic": "a", "bytes": 1}\n')
    config = tmp_path / "notices.properties"
    config.write_text(CONFIG)
    _, result, _ = run_policy_stage(spark, NoticesPolicy(), tmp_path / "telemetry", tmp_path / "out",
                                    RunConfigs(notices=config))
    assert result.summary["notices"] == 0 and result.summary["input"]["quarantined"] == 1
    assert spark.read.parquet(str(tmp_path / "out" / "notice_decisions")).count() == 0


def test_a_clean_run_removes_an_earlier_quarantine(spark, tmp_path: Path, telemetry) -> None:
    config_path, good = telemetry
    out = tmp_path / "out"
    run_policy_stage(spark, NoticesPolicy(), tmp_path / "telemetry", out, RunConfigs(notices=config_path))
    assert (out / "quarantine" / "producer_traffic").exists()
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "producer_traffic.jsonl").write_text(good.read_text())
    _, result, _ = run_policy_stage(spark, NoticesPolicy(), clean, out, RunConfigs(notices=config_path))
    assert result.summary["input"]["quarantined"] == 0 and result.summary["input"]["used"] == 400
    assert not (out / "quarantine" / "producer_traffic").exists()
