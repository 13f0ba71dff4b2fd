"""`quotaplane notices evaluate`: the CLI contract, run in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quotaplane.cli import main

TRAFFIC = [
    {"ts_ms": 0, "connection_id": "c1", "producer_id": 1, "topic": "a", "bytes": 1100,
     "supports_throttle": True, "receipt_latency_ms": 20},
    {"ts_ms": 1, "connection_id": "c1", "producer_id": 2, "topic": "b", "bytes": 10},
    {"ts_ms": "1970-01-01T00:00:00.200Z", "connection_id": "c1", "producer_id": 1, "topic": "a",
     "bytes": 1100},
]


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    config = tmp_path / "notices.properties"
    config.write_text("topic.public/default/a.publishMaxByteRate=1000\n")
    traffic = tmp_path / "traffic.jsonl"
    traffic.write_text("".join(json.dumps(r) + "\n" for r in TRAFFIC))
    return config, traffic


def test_prints_one_json_line_per_notice(files, capsys) -> None:
    config, traffic = files
    assert main(["notices", "evaluate", "--config", str(config), "--traffic", str(traffic)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows == [
        {"ts_ms": 0, "broker": "", "connection_id": "c1", "producer_id": 1,
         "topic": "persistent://public/default/a", "reason": "TopicProduceQuotaExceeded",
         "pause_for_millis": 116, "receipt": "in_time", "connection_paused_ms": 0, "stalled_topics": 0,
         "connection_paused_ms_without_notices": 116, "stalled_topics_without_notices": 1},
        {"ts_ms": 200, "broker": "", "connection_id": "c1", "producer_id": 1,
         "topic": "persistent://public/default/a", "reason": "TopicProduceQuotaExceeded",
         "pause_for_millis": 1016, "receipt": "unsupported", "connection_paused_ms": 1016,
         "stalled_topics": 0, "connection_paused_ms_without_notices": 1016,
         "stalled_topics_without_notices": 0},
    ]


def test_reads_csv_traffic_too(files, tmp_path: Path, capsys) -> None:
    config, _ = files
    traffic = tmp_path / "traffic.csv"
    traffic.write_text("ts_ms,connection_id,producer_id,topic,bytes,supports_throttle,receipt_latency_ms\n"
                       "0,c1,1,a,1100,true,150\n")
    assert main(["notices", "evaluate", "--config", str(config), "--traffic", str(traffic)]) == 0
    [row] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert (row["receipt"], row["connection_paused_ms"]) == ("late", 16)


def test_writes_the_metrics(files, tmp_path: Path, capsys) -> None:
    config, traffic = files
    metrics = tmp_path / "metrics.prom"
    assert main(["notices", "evaluate", "--config", str(config), "--traffic", str(traffic),
                 "--metrics", str(metrics)]) == 0
    text = metrics.read_text()
    topic = 'reason="TopicProduceQuotaExceeded",topic="persistent://public/default/a"'
    assert ('quotaplane_producer_throttle_notices_total{broker="",reason="TopicProduceQuotaExceeded",'
            'receipt="in_time",topic="persistent://public/default/a"} 1.0') in text
    assert f'quotaplane_connection_paused_seconds_total{{broker="",notices="false",{topic}}} 1.132' in text
    assert ('quotaplane_pulsar_broker_topic_publish_rate_limit_count_total{broker="",'
            'limiter="TopicProduceQuotaExceeded",topic="persistent://public/default/a"} 2.0') in text


def test_bad_config_exits_2_naming_the_property(files, tmp_path: Path, capsys) -> None:
    _, traffic = files
    config = tmp_path / "bad.properties"
    config.write_text("throttleProducerReceiptWaitTimeMillis=-5\n")
    assert main(["notices", "evaluate", "--config", str(config), "--traffic", str(traffic)]) == 2
    assert "throttleProducerReceiptWaitTimeMillis=-5: must be from 0" in capsys.readouterr().err


def test_bad_traffic_exits_2_naming_line_field_value_and_rule(files, tmp_path: Path, capsys) -> None:
    config, _ = files
    traffic = tmp_path / "t.jsonl"
    traffic.write_text(json.dumps({**TRAFFIC[1], "receipt_latency_ms": -3}) + "\n")
    assert main(["notices", "evaluate", "--config", str(config), "--traffic", str(traffic)]) == 2
    err = capsys.readouterr().err
    assert "t.jsonl:1" in err and "receipt_latency_ms must not be negative" in err


def test_missing_traffic_exits_2_naming_the_path(files, tmp_path: Path, capsys) -> None:
    config, _ = files
    missing = tmp_path / "nowhere.jsonl"
    assert main(["notices", "evaluate", "--config", str(config), "--traffic", str(missing)]) == 2
    assert f"{missing}: field '(file)'='{missing}': cannot read: No such file or directory" in (
        capsys.readouterr().err)
