"""Bad input of every class ends in exit 2 with one line naming the file, line or property and the
rule: never a traceback. Each class is tried on every policy's `evaluate` that reads it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quotaplane.cli import main

STORAGE = ("client.quota.callback.static.storage.volume.source=cluster\n"
           "client.quota.callback.static.storage.perVolumeLimit.availableBytesBelow.hard=10\n")
TOPICS = "total.bytes.in.per.sec.threshold=1000\n"
QUOTAS = json.dumps([{"entity": {"user": "<default>"}, "quotas": {"producer_byte_rate": 1000}}])
POLICIES = json.dumps({"broker": {"backlogQuotaDefaultLimitBytes": 100}})
RECORDS = {
    "storage": '{"broker_id": 1, "log_dir": "/d", "total_bytes": 100, "available_bytes": 50}',
    "topics": '{"ts_ms": 1, "broker_id": 1, "topic": "a", "bytes": 10}',
    "clients": '{"ts_ms": 1, "broker_id": 1, "user": "u", "client_id": "c", "quota_type": "produce", '
               '"value": 10}',
    "backlog": '{"ts_ms": 1, "topic": "persistent://t/ns/a", "subscription": "s", "backlog_size_bytes": 0, '
               '"backlog_entries": 0}',
}


def command(policy: str, tmp_path: Path, records: bytes, config: bytes | None = None) -> list[str]:
    data = tmp_path / "records.jsonl"
    data.write_bytes(records)
    defaults = {"storage": ("storage.properties", STORAGE), "topics": ("topics.properties", TOPICS),
                "clients": ("quotas.json", QUOTAS), "backlog": ("policies.json", POLICIES)}
    name, text = defaults[policy]
    conf = tmp_path / name
    conf.write_bytes(config if config is not None else text.encode())
    flags = {"storage": ["--config", str(conf), "--volumes", str(data)],
             "topics": ["--config", str(conf), "--requests", str(data)],
             "clients": ["--quotas", str(conf), "--requests", str(data)],
             "backlog": ["--policies", str(conf), "--snapshots", str(data)]}[policy]
    return [policy, "evaluate", *flags]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


@pytest.mark.parametrize("policy", RECORDS)
def test_records_that_are_not_utf8_name_the_file_and_line(policy: str, tmp_path: Path, capsys) -> None:
    good = RECORDS[policy].encode()
    code, err = run(command(policy, tmp_path, good + b"\n" + good.replace(b'"', b'"\xff', 1) + b"\n"), capsys)
    assert code == 2
    assert "records.jsonl:2" in err and "not UTF-8" in err


@pytest.mark.parametrize("policy", RECORDS)
@pytest.mark.parametrize(("line", "reason"), [
    (b"{}{}", "unparsable record"), (b"[]", "not a JSON object"), (b'{"a": 1} x', "unparsable record"),
    (b'{"a": 1, "a": 2}', "unparsable record"), (b'{"a": NaN}', "unparsable record"),
])
def test_lines_that_are_not_one_object_are_errors(policy: str, line: bytes, reason: str, tmp_path: Path,
                                                  capsys) -> None:
    code, err = run(command(policy, tmp_path, RECORDS[policy].encode() + b"\n" + line + b"\n"), capsys)
    assert code == 2 and "records.jsonl:2" in err and reason in err


@pytest.mark.parametrize("policy", ["clients", "backlog"])
def test_json_configs_that_are_not_utf8_name_the_line(policy: str, tmp_path: Path, capsys) -> None:
    config = (QUOTAS if policy == "clients" else POLICIES).replace("{", "{\n", 1).encode()
    config = config.replace(b"\n", b"\n\xfe", 1)
    code, err = run(command(policy, tmp_path, RECORDS[policy].encode(), config), capsys)
    assert code == 2 and ":2=" in err and "not UTF-8" in err


def test_a_duplicate_key_in_the_backlog_policies_is_an_error(tmp_path: Path, capsys) -> None:
    config = b'{"broker": {"backlogQuotaDefaultLimitBytes": 1, "backlogQuotaDefaultLimitBytes": 2}}'
    code, err = run(command("backlog", tmp_path, RECORDS["backlog"].encode(), config), capsys)
    assert code == 2 and "backlogQuotaDefaultLimitBytes: duplicate key in a JSON object" in err


def test_a_duplicate_key_in_kafka_configs_text_is_an_error(tmp_path: Path, capsys) -> None:
    config = (b"Quota configs for user-principal 'u' are producer_byte_rate=1000.0, "
              b"producer_byte_rate=2000.0\n")
    code, err = run(command("clients", tmp_path, RECORDS["clients"].encode(), config), capsys)
    assert code == 2 and "duplicate key on one quota line" in err


@pytest.mark.parametrize("policy", ["storage", "topics"])
def test_properties_in_iso_8859_1_are_read_and_bad_escapes_named(policy: str, tmp_path: Path, capsys) -> None:
    base = (STORAGE if policy == "storage" else TOPICS).encode()
    code, _ = run(command(policy, tmp_path, RECORDS[policy].encode(), b"# caf\xe9\n" + base), capsys)
    assert code == 0
    capsys.readouterr()
    code, err = run(command(policy, tmp_path, RECORDS[policy].encode(), base + b"x=\\u12g4\n"), capsys)
    line = base.count(b"\n") + 1
    assert code == 2 and f".properties:{line}=x=" in err and "malformed \\uXXXX escape" in err
