"""`quotaplane topics evaluate`: the stable CLI contract, run in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quotaplane.cli import main

CONFIG = """\
total.bytes.in.per.sec.threshold=1000
message.max.bytes=5000
topic.a.bytes.in.per.sec.threshold=400
topic.b.bytes.in.per.sec.threshold@20000=700
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    lines = [json.dumps({"ts_ms": t, "broker_id": 1, "topic": "a" if t % 2000 else "b",
                         "bytes": 6000 if t == 7000 else 3000}) for t in range(0, 12_000, 1000)]
    lines.insert(0, json.dumps({"ts_ms": "1970-01-01T00:00:11.500Z", "broker_id": "2", "topic": "c",
                                "bytes": 1}))
    config = write(tmp_path, "topics.properties", CONFIG)
    return config, write(tmp_path, "requests.jsonl", "\n".join(lines) + "\n")


def test_prints_one_json_line_per_request_in_input_order(files, capsys) -> None:
    config, requests = files
    assert main(["topics", "evaluate", "--config", str(config), "--requests", str(requests)]) == 0
    captured = capsys.readouterr()
    rows = [json.loads(line) for line in captured.out.splitlines()]
    assert len(rows) == 13
    assert rows[0] == {"ts_ms": 11_500, "broker_id": 2, "topic": "c", "bytes": 1, "decision": "accepted",
                       "reason": None, "total_rate": 0.0, "topic_rate": 0.0, "total_threshold": 1000,
                       "topic_threshold": 600, "threshold_source": "default"}
    assert [r["ts_ms"] for r in rows[1:]] == list(range(0, 12_000, 1000))
    assert [r["decision"] for r in rows[1:9]] == ["accepted"] * 6 + ["throttled", "error"]
    assert rows[7] == {"ts_ms": 6000, "broker_id": 1, "topic": "b", "bytes": 3000, "decision": "throttled",
                       "reason": "bytes_in_quota_exceeded", "total_rate": 3000.0, "topic_rate": 1800.0,
                       "total_threshold": 1000, "topic_threshold": 600, "threshold_source": "default"}
    # the worked example of docs/topics.md
    assert [(r["ts_ms"], r["total_rate"], r["topic_rate"], r["decision"]) for r in rows[6:12]] == [
        (5000, 3000.0, 0.0, "accepted"), (6000, 3000.0, 1800.0, "throttled"), (7000, 3000.0, 1800.0, "error"),
        (8000, 3000.0, 1800.0, "throttled"), (9000, 3000.0, 1800.0, "throttled"),
        (10_000, 2808.106595110376, 1656.079946332782, "throttled")]
    assert captured.err == (
        "warning: topic.b.bytes.in.per.sec.threshold@20000=700: rejected: topic b with the new value 700 "
        "makes the explicit topic thresholds sum to 1100, above total.bytes.in.per.sec.threshold=1000 (the "
        "other explicit thresholds sum to 400)\n")


def test_writes_the_meters_as_prometheus_text(files, tmp_path: Path, capsys) -> None:
    config, requests = files
    metrics = tmp_path / "out" / "topics.prom"
    assert main(["topics", "evaluate", "--config", str(config), "--requests", str(requests),
                 "--metrics", str(metrics)]) == 0
    text = metrics.read_text()
    assert 'quotaplane_topic_bytes_in_total{broker_id="1",topic="b"} 9000.0' in text
    assert 'quotaplane_broker_error_bytes_in_total{broker_id="1"} 6000.0' in text
    assert 'quotaplane_topic_produce_requests_total{broker_id="1",decision="throttled",topic="a"}' in text
    assert 'quotaplane_topic_threshold_changes_total{status="rejected"} 1.0' in text


def test_bad_config_exits_2_naming_the_property(tmp_path: Path, files, capsys) -> None:
    _, requests = files
    config = write(tmp_path, "bad.properties", "total.bytes.in.per.sec.threshold=-3\n")
    assert main(["topics", "evaluate", "--config", str(config), "--requests", str(requests)]) == 2
    assert capsys.readouterr().err == "error: total.bytes.in.per.sec.threshold=-3: must be at least 0\n"


def test_bad_request_exits_2_naming_line_field_value_and_rule(tmp_path: Path, files, capsys) -> None:
    config, _ = files
    requests = write(tmp_path, "r.jsonl", '{"ts_ms": 1, "broker_id": 1, "topic": "a", "bytes": 1}\n\n'
                     '{"ts_ms": 2, "broker_id": 1, "topic": "a", "bytes": -1}\n')
    assert main(["topics", "evaluate", "--config", str(config), "--requests", str(requests)]) == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last == "error: r.jsonl:3: field 'bytes'=-1: bytes must not be negative"
    write(tmp_path, "r.jsonl", '{"ts_ms": 1, "broker_id": 1, "topic": "a b", "bytes": 1}\n')
    assert main(["topics", "evaluate", "--config", str(config), "--requests", str(requests)]) == 2
    assert "field 'topic'='a b': topic must be 1 to 249 of [a-zA-Z0-9._-]" in capsys.readouterr().err
    write(tmp_path, "r.jsonl", "[1, 2]\n")
    assert main(["topics", "evaluate", "--config", str(config), "--requests", str(requests)]) == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last == "error: r.jsonl:1: field '(record)'='[1, 2]': not a JSON object"


def test_missing_requests_file_exits_2(files, tmp_path: Path, capsys) -> None:
    config, _ = files
    assert main(["topics", "evaluate", "--config", str(config), "--requests", str(tmp_path / "none")]) == 2
    assert "cannot read" in capsys.readouterr().err
