"""The `quotaplane run` stage of topic bytes-in quotas, end to end on a small telemetry directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quotaplane.core.errors import InputError
from quotaplane.core.exposition import render
from quotaplane.core.policy import RunConfigs
from quotaplane.core.runner import run_pipeline
from quotaplane.topics.config import load_topics_config
from quotaplane.topics.engine.evaluate import evaluate
from quotaplane.topics.engine.intervals import topic_intervals
from quotaplane.topics.engine.requests import read_requests
from quotaplane.topics.policy import TopicsPolicy
from tests.support.stages import run_policy_stage

pytestmark = pytest.mark.spark

CONFIG = """\
total.bytes.in.per.sec.threshold=1000
message.max.bytes=5000
topic.a.bytes.in.per.sec.threshold=400
topic.b.bytes.in.per.sec.threshold@20000=700
quotaplane.topics.interval.ms=10000
"""


@pytest.fixture
def telemetry(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "telemetry").mkdir()
    good = [{"ts_ms": t, "broker_id": 1 + (t // 1000) % 2, "topic": "ab"[(t // 2000) % 2],
             "bytes": 9000 if t == 7000 else 2500} for t in range(0, 40_000, 500)]
    lines = [json.dumps(r) for r in good] + ['{"ts_ms": 5, "broker_id": 1, "topic": "a", "bytes": -4}']
    (tmp_path / "telemetry" / "topic_requests.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "good.jsonl").write_text("\n".join(json.dumps(r) for r in good) + "\n")
    config = tmp_path / "topics.properties"
    config.write_text(CONFIG)
    return config, tmp_path / "good.jsonl"


def test_stage_writes_tables_metrics_summary_and_report(spark, tmp_path: Path, telemetry) -> None:
    config_path, good = telemetry
    ctx, result, _ = run_policy_stage(spark, TopicsPolicy(), tmp_path / "telemetry", tmp_path / "out",
                                      RunConfigs(topics=config_path))
    config = load_topics_config(config_path)
    expected = evaluate(config, read_requests(good))
    counts = {d: sum(1 for x in expected.decisions if x.decision == d)
              for d in ("accepted", "throttled", "error")}
    assert counts["throttled"] > 0 and counts["error"] == 1
    summary = result.summary
    assert summary["input"] == {"input": str(tmp_path / "telemetry" / "topic_requests.jsonl"), "read": 81,
                                "used": 80, "quarantined": 1, "reader": "spark"}
    assert (summary["accepted_requests"], summary["throttled_requests"], summary["error_requests"]) == (
        counts["accepted"], counts["throttled"], counts["error"])
    assert summary["brokers"] == 2 and summary["threshold_changes_rejected"] == 1
    assert summary["as_of_ms"] == 39_500

    out = ctx.out_dir
    decided = spark.read.parquet(str(out / "topic_decisions"))
    assert decided.count() == 80
    assert spark.read.parquet(str(out / "topic_dropped")).count() == counts["throttled"] + counts["error"]
    assert spark.read.parquet(str(out / "topic_meters")).count() == 2 + 4
    assert spark.read.parquet(str(out / "topic_intervals")).count() == len(
        topic_intervals(expected.decisions, 10_000))
    changes = spark.read.parquet(str(out / "topic_threshold_changes")).orderBy("key").collect()
    assert [(c.key, c.accepted) for c in changes] == [("topic.a.bytes.in.per.sec.threshold", True),
                                                      ("topic.b.bytes.in.per.sec.threshold@20000", False)]
    quarantined = spark.read.parquet(str(out / "quarantine" / "topic_requests")).collect()
    assert [q.reason for q in quarantined] == ["bytes must not be negative"]

    text = render(ctx.registry)
    b1 = next(m for m in expected.meters if m.broker_id == 1 and m.topic is None)
    assert f'quotaplane_broker_bytes_in_total{{broker_id="1"}} {float(b1.bytes_in_count)}' in text
    assert f'quotaplane_broker_bytes_in_one_minute_rate{{broker_id="1"}} {b1.bytes_in_rate!r}' in text
    assert ('quotaplane_topic_bytes_in_threshold_bytes_per_second{broker_id="1",source="explicit",'
            'topic="a"} 400.0') in text
    [section] = result.sections
    html = section.render()
    assert "Topics over their threshold" in html and "<img" in html
    assert "rejected" in html
    assert result.console[0].startswith("topics: 80 produce requests on 2 broker(s)")


def test_stage_does_not_run_without_its_input_or_config(spark, tmp_path: Path, telemetry) -> None:
    config_path, _ = telemetry
    assert TopicsPolicy().load_config(RunConfigs()) is None
    (tmp_path / "telemetry" / "topic_requests.jsonl").unlink()
    with pytest.raises(InputError, match="no policy could run"):
        run_pipeline(tmp_path / "telemetry", RunConfigs(topics=config_path), tmp_path / "out",
                     [TopicsPolicy()], spark=spark, stream=None)
