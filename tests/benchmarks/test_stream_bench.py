"""The streaming benchmark's landing: windows of a policy's inputs, in time order (never its results)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from benchmarks import stream as stream_bench
from benchmarks.stream import Slice, _only, cut
from quotaplane.core.policy import RunConfigs
from quotaplane.sim.run import simulate


def test_the_inputs_are_cut_into_windows_landed_in_order(tmp_path: Path) -> None:
    data = tmp_path / "data"
    simulate("replication-fill", data, {"brokers": 3, "days": 0.01, "clients": 3, "topics": 2},
             kinds=["topic_requests"], fmt="parquet")
    sl = cut(data, "topics", tmp_path / "landing", minutes=2, files=3)
    files = sorted((tmp_path / "landing" / "topic_requests").glob("w*.jsonl"))
    assert len(files) == 3 and sl.window_ms == 40_000
    rows = [[json.loads(line) for line in f.read_text().splitlines()] for f in files]
    assert sum(map(len, rows)) == sl.rows == sum(r for r, _ in sl.windows) > 0
    start = min(r["ts_ms"] for r in rows[0])
    for k, window in enumerate(rows):
        times = [r["ts_ms"] for r in window]
        assert times == sorted(times)
        assert all(start + k * sl.window_ms <= t < start + (k + 1) * sl.window_ms for t in times)
        assert sl.windows[k][1] == times[-1]
    assert [f.stat().st_mtime for f in files] == sorted(f.stat().st_mtime for f in files)


def test_each_policy_runs_with_its_own_configuration_only() -> None:
    configs = RunConfigs(storage=Path("s"), client_quotas=Path("c"), topics=Path("t"),
                         backlog_policies=Path("b"))
    assert _only(configs, "clients") == RunConfigs(client_quotas=Path("c"))
    assert _only(configs, "backlog") == RunConfigs(backlog_policies=Path("b"))


def test_each_policy_is_run_once_untimed_before_it_is_measured(tmp_path: Path, monkeypatch) -> None:
    runs: list[str] = []

    def stream(spark, sl, configs, out: Path) -> dict:
        runs.append(f"{out.parent.name}/{out.name}")
        return {"rows_per_second": 1.0}

    def batch(spark, sl, configs, name, out: Path) -> dict:
        runs.append(f"{out.parent.name}/{out.name}")
        return {"rows_per_second": 2.0}

    landing = Slice(tmp_path / "landing", 10, [(10, 0)], 1_000)
    monkeypatch.setattr(stream_bench, "ensure", lambda tier, scale: SimpleNamespace(path=tmp_path))
    monkeypatch.setattr(stream_bench.policy_configs, "write", lambda tier, scale, folder: RunConfigs())
    monkeypatch.setattr(stream_bench, "cut", lambda *args: landing)
    monkeypatch.setattr(stream_bench, "catch_up", stream)
    monkeypatch.setattr(stream_bench, "batch_baseline", batch)
    monkeypatch.setattr(stream_bench, "latency", lambda *args: {"median_seconds": 1.0, "p99_seconds": 1.0})
    tier = stream_bench.TIERS["S"]
    result = stream_bench.bench(None, tier, ["topics"], None, 1, 1.0, tmp_path / "work")
    assert runs == ["warm-up/catch-up", "warm-up/batch", "topics/catch-up", "topics/batch"]
    assert result["topics"]["stream_to_batch"] == 0.5
    runs.clear()
    stream_bench.bench(None, tier, ["topics"], None, 1, 1.0, tmp_path / "work", warmup=False)
    assert runs == ["topics/catch-up", "topics/batch"]
