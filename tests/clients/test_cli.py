"""`quotaplane clients evaluate|resolve`, run in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from quotaplane.cli import main

QUOTAS = [
    {"entity": {"user": "<default>"}, "quotas": {"producer_byte_rate": 500}},
    {"entity": {"user": "alice", "client-id": "app"}, "quotas": {"consumer_byte_rate": 1000}},
]


def write_requests(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def vector_rows() -> list[dict]:
    rows = [{"ts_ms": 1000 * i, "broker_id": 1, "user": "alice", "client_id": "app",
             "quota_type": "produce", "value": 400} for i in range(10)]
    rows.append({"ts_ms": 9500, "broker_id": 1, "user": "alice", "client_id": "app",
                 "quota_type": "produce", "value": 2300})
    return rows


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    quotas = tmp_path / "quotas.json"
    quotas.write_text(json.dumps(QUOTAS))
    return quotas, write_requests(tmp_path / "requests.jsonl", vector_rows())


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_evaluate_prints_one_line_per_request_in_input_order(files, capsys) -> None:
    quotas, requests = files
    code, out, err = run(capsys, "clients", "evaluate", "--quotas", str(quotas), "--requests", str(requests))
    assert code == 0 and err == ""
    lines = [json.loads(line) for line in out.splitlines()]
    assert len(lines) == 11
    last = lines[-1]
    assert {k: last[k] for k in ("ts_ms", "broker_id", "user", "client_id", "quota_type", "quota_limit",
                                 "rate", "throttle_time_ms")} == {
        "ts_ms": 9500, "broker_id": 1, "user": "alice", "client_id": "app", "quota_type": "produce",
        "quota_limit": 500.0, "rate": 600.0, "throttle_time_ms": 2100}
    assert (last["tag_user"], last["tag_client_id"], last["quota_level"]) == ("alice", "", 6)
    assert "quota_value" not in last


def test_evaluate_window_options_and_quota_value(files, capsys) -> None:
    quotas, requests = files
    code, out, _ = run(capsys, "clients", "evaluate", "--quotas", str(quotas), "--requests", str(requests),
                       "--window-num", "2", "--window-size-seconds", "2", "--quota-value-metric")
    assert code == 0
    last = json.loads(out.splitlines()[-1])
    # 2 samples x 2 s: at 9500 the live samples started at 6000 (400+400) and 8000 (400+400+2300);
    # the one started at 4000 had its last event at 5000, 4000 ms ago, and is purged
    assert (last["window_ms"], last["rate"], last["quota_value"]) == (3500, 3900 / 3.5, 500.0)


def test_evaluate_unlimited_is_null(tmp_path, capsys) -> None:
    quotas = tmp_path / "q.json"
    quotas.write_text(json.dumps(QUOTAS))
    requests = write_requests(tmp_path / "r.jsonl", [
        {"ts_ms": 0, "broker_id": 1, "user": "bob", "client_id": "x", "quota_type": "fetch", "value": 5}])
    code, out, _ = run(capsys, "clients", "evaluate", "--quotas", str(quotas), "--requests", str(requests))
    row = json.loads(out)
    assert code == 0 and row["quota_limit"] is None and row["throttle_time_ms"] == 0
    assert (row["tag_user"], row["tag_client_id"], row["rate"]) == ("bob", "x", 0.5)


def test_evaluate_with_storage_decisions(files, tmp_path, capsys) -> None:
    quotas, requests = files
    decisions = tmp_path / "decisions"
    decisions.mkdir()
    pq.write_table(pa.table({"ts_ms": pa.array([0, 9000], pa.int64()),
                             "throttle_factor": [1.0, 0.5],
                             "observing_broker_id": pa.array([None, None], pa.int64()),
                             "source": ["cluster", "cluster"]}), decisions / "part-0.parquet")
    code, out, _ = run(capsys, "clients", "evaluate", "--quotas", str(quotas), "--requests", str(requests),
                       "--storage-decisions", str(decisions))
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert [line["quota_limit"] for line in lines[-3:]] == [500.0, 250.0, 250.0]
    assert lines[-1]["throttle_factor"] == 0.5
    assert lines[-1]["throttle_time_ms"] == 14_700  # (600 - 250) / 250 x 10 500


def test_evaluate_static_produce(tmp_path, capsys) -> None:
    quotas = tmp_path / "q.json"
    quotas.write_text("[]")
    requests = write_requests(tmp_path / "r.jsonl", [
        {"ts_ms": 0, "broker_id": 1, "user": "bob", "client_id": "x", "quota_type": "produce", "value": 5}])
    code, out, _ = run(capsys, "clients", "evaluate", "--quotas", str(quotas), "--requests", str(requests),
                       "--static-produce", "100")
    row = json.loads(out)
    assert code == 0
    assert (row["quota_limit"], row["quota_source"], row["throttle_factor"]) == (100.0, "static", 1.0)


def test_bad_request_line_names_line_and_field(files, tmp_path, capsys) -> None:
    quotas, _ = files
    requests = tmp_path / "bad.jsonl"
    row = {"ts_ms": 0, "broker_id": 1, "user": "a", "client_id": "c", "quota_type": "produce", "value": 1}
    write_requests(requests, [row, {**row, "ts_ms": 1, "value": 1.5}])
    code, out, err = run(capsys, "clients", "evaluate", "--quotas", str(quotas), "--requests", str(requests))
    assert code == 2 and out == ""
    assert err == ("error: bad.jsonl:2: field 'value'=1.5: value must be a whole number for produce, fetch "
                   "and controller_mutation\n")


@pytest.mark.parametrize(("row", "message"), [
    ({"ts_ms": 0, "broker_id": 1, "user": "a", "client_id": "c", "quota_type": "bytes", "value": 1},
     "field 'quota_type'='bytes': quota_type must be one of produce, fetch, request, controller_mutation"),
    ({"ts_ms": 0, "broker_id": 1, "user": "a", "client_id": "c", "quota_type": "fetch", "value": -1},
     "field 'value'=-1.0: value must not be negative"),
    ({"ts_ms": 0, "broker_id": 1, "user": "", "client_id": "c", "quota_type": "fetch", "value": 1},
     "field 'user'='': user must not be empty (Kafka's unauthenticated principal is ANONYMOUS)"),
    ({"ts_ms": 0, "user": "a", "client_id": "c", "quota_type": "fetch", "value": 1},
     "field 'broker_id'=None: missing required field"),
])
def test_bad_request_fields(files, tmp_path, capsys, row, message) -> None:
    quotas, _ = files
    requests = write_requests(tmp_path / "r.jsonl", [row])
    code, _, err = run(capsys, "clients", "evaluate", "--quotas", str(quotas), "--requests", str(requests))
    assert code == 2 and err == f"error: r.jsonl:1: {message}\n"


def test_bad_quota_file_exits_2_with_one_error_per_line(files, tmp_path, capsys) -> None:
    _, requests = files
    quotas = tmp_path / "q.json"
    quotas.write_text(json.dumps([{"entity": {"user": "a"}, "quotas": {"producer_byte_rate": -1, "x": 1}}]))
    code, _, err = run(capsys, "clients", "evaluate", "--quotas", str(quotas), "--requests", str(requests))
    assert code == 2
    assert err.splitlines() == [
        "error: [user=a] producer_byte_rate=-1: must not be negative "
        "(a quota is a rate; 0 blocks the client)",
        "error: [user=a] x=1: unknown quota key; the keys are producer_byte_rate, consumer_byte_rate, "
        "request_percentage, controller_mutation_rate"]


def test_bad_storage_decisions(files, tmp_path, capsys) -> None:
    quotas, requests = files
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"ts_ms": [0], "throttle_factor": [1.5]}), path)
    code, _, err = run(capsys, "clients", "evaluate", "--quotas", str(quotas), "--requests", str(requests),
                       "--storage-decisions", str(path))
    assert code == 2 and "field 'throttle_factor'=1.5: must be a number from 0.0 to 1.0" in err


def test_window_num_must_be_at_least_one(files, capsys) -> None:
    quotas, requests = files
    with pytest.raises(SystemExit) as info:
        main(["clients", "evaluate", "--quotas", str(quotas), "--requests", str(requests),
              "--window-num", "0"])
    assert info.value.code == 2
    assert "0 must be from 1 to 2147483647" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["1_000", "99999999999999999999", "1.5", "NaN"])
def test_window_num_out_of_its_type_is_an_error(files, capsys, value: str) -> None:
    quotas, requests = files
    with pytest.raises(SystemExit) as info:
        main(["clients", "evaluate", "--quotas", str(quotas), "--requests", str(requests),
              "--window-num", value])
    assert info.value.code == 2
    assert "argument --window-num" in capsys.readouterr().err


def test_resolve_prints_tags_limit_and_level(tmp_path, capsys) -> None:
    quotas = tmp_path / "q.txt"
    quotas.write_text("Quota configs for user-principal 'alice', the default client-id are "
                      "producer_byte_rate=2048.0\n"
                      "Quota configs for the default client-id are producer_byte_rate=100.0, "
                      "consumer_byte_rate=50.0\n")
    code, out, _ = run(capsys, "clients", "resolve", "--quotas", str(quotas), "--user", "alice",
                       "--client-id", "app")
    result = json.loads(out)
    assert code == 0
    produce = result["quota_types"]["produce"]
    assert produce == {"config_key": "producer_byte_rate",
                       "metric_tags": {"user": "alice", "client-id": "app"},
                       "limit": 2048.0, "level": 2, "level_path": "/config/users/<user>/clients/<default>",
                       "entity": "/config/users/alice/clients/<default>", "recorded": True}
    fetch = result["quota_types"]["fetch"]
    assert fetch["metric_tags"] == {"user": "", "client-id": "app"}
    assert (fetch["limit"], fetch["level"]) == (50.0, 8)
    request = result["quota_types"]["request"]
    assert (request["limit"], request["level"], request["recorded"]) == (None, None, False)
    code, out, _ = run(capsys, "clients", "resolve", "--quotas", str(quotas), "--user", "bob",
                       "--client-id", "app")
    produce = json.loads(out)["quota_types"]["produce"]
    assert (produce["metric_tags"], produce["limit"], produce["level"]) == (
        {"user": "", "client-id": "app"}, 100.0, 8)
