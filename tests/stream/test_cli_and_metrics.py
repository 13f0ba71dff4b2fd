"""`quotaplane stream`'s options and errors, and its metrics (checked by promtool)."""

from __future__ import annotations

import subprocess
import urllib.request
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from quotaplane.cli import main
from quotaplane.stream.commits import Commit
from quotaplane.stream.status import StreamStatus
from tests.support import tools


def test_a_stream_without_any_policy_configuration_is_refused(tmp_path: Path, capsys) -> None:
    assert main(["stream", "--landing", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "--config" in err and "--backlog-policies" in err


@pytest.mark.parametrize(("option", "value", "rule"), [
    ("--trigger", "0", "must be more than 0 seconds"),
    ("--trigger", "soon", "not a number of seconds"),
    ("--until-idle", "-1", "must be more than 0 seconds"),
    ("--watermark-delay", "-5", "must be at least 0 seconds"),
    ("--max-files-per-trigger", "0", "must be at least 1"),
])
def test_bad_option_values_name_the_option_the_value_and_the_rule(tmp_path: Path, capsys, option: str,
                                                                  value: str, rule: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["stream", "--landing", str(tmp_path), "--out", str(tmp_path / "o"), option, value])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert option in err and repr(value) in err and rule in err


def test_a_landing_that_is_not_a_directory_is_an_error(tmp_path: Path, capsys, repo_root: Path) -> None:
    config = repo_root / "src/quotaplane/examples/replication-fill/config/backlog-policies.json"
    code = main(["stream", "--landing", str(tmp_path / "missing"), "--out", str(tmp_path / "o"),
                 "--backlog-policies", str(config)])
    assert code == 2
    assert "--landing" in capsys.readouterr().err


def test_a_bad_policy_configuration_is_reported_before_spark_starts(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "storage.properties"
    bad.write_text("client.quota.callback.static.storage.soft=not-a-number\n", encoding="utf-8")
    args = ["stream", "--landing", str(tmp_path), "--out", str(tmp_path / "o"), "--config", str(bad)]
    assert main(args) == 2
    assert "client.quota.callback.static.storage.soft" in capsys.readouterr().err


def _status() -> StreamStatus:
    status = StreamStatus(["storage", "clients"])
    commit = Commit(3, 2, 1_000, 61_000, totals={
        "read:volumes": 10, "used:volumes": 7, "quarantined:volumes": 2, "late:volumes": 1,
        "table:storage_decisions": 4, "policy_late:storage": 1,
        "outcome:topic_decisions:decision:reject": 2, "outcome:storage_decisions:fallback_reason:null": 4})
    commit.rows, commit.seconds, commit.keys = 10, 2.0, {"storage": 1, "clients": 3}
    commit.in_force = [{"ts_ms": 5, "cluster": "c1", "observing_broker_id": None, "throttle_factor": 0.5}]
    status.update(commit, {"inputRowsPerSecond": 1.5, "processedRowsPerSecond": 2.0})
    return status


def test_the_metrics_follow_the_last_commit() -> None:
    text = generate_latest(_status().registry).decode()
    for line in ('quotaplane_stream_commits_total 3.0', "quotaplane_stream_watermark_seconds 1.0",
                 "quotaplane_stream_rows_per_second 5.0",
                 'quotaplane_stream_input_rows_total{input="volumes",outcome="quarantined"} 2.0',
                 'quotaplane_stream_input_rows_total{input="volumes",outcome="late"} 1.0',
                 'quotaplane_stream_decisions_total{table="storage_decisions"} 4.0',
                 'quotaplane_stream_late_rows_total{policy="storage"} 1.0',
                 'quotaplane_stream_decision_outcomes_total{column="decision",table="topic_decisions",'
                 'value="reject"} 2.0',
                 'quotaplane_stream_state_keys{policy="clients"} 3.0',
                 'quotaplane_stream_storage_throttle_factor{cluster="c1",observing_broker_id=""} 0.5',
                 "quotaplane_stream_spark_input_files_per_second 1.5"):
        assert line in text, line


def test_the_metrics_are_served_and_pass_promtool(tmp_path: Path) -> None:
    status = _status()
    server = status.serve("127.0.0.1", 0)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=5) as resp:
            body = resp.read()
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/healthz", timeout=5) as resp:
            assert resp.status == 200
    finally:
        server.close()
    assert b"quotaplane_stream_commits_total 3.0" in body
    promtool = tools.promtool()
    check = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True, timeout=60)
    assert check.returncode == 0, check.stdout.decode() + check.stderr.decode()


def test_the_progress_line_says_what_a_commit_did() -> None:
    status = _status()
    line = status.line(status.commit)
    assert line.startswith("  batch 3: 10 rows in 2.0s (5 rows/s)")
    assert "watermark 1000" in line and "state keys clients=3 storage=1" in line
