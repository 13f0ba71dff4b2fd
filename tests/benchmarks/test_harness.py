"""The benchmark harness on tiny inputs: the shape of what it writes, never its timings."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from benchmarks import configs, docs, floors, reference, results, stages
from benchmarks import run as run_module
from benchmarks.datasets import ensure
from benchmarks.fit import linear_fit
from benchmarks.policies import POLICIES
from benchmarks.prefix import cutoff_time
from benchmarks.results import extrapolate, kind_factors
from benchmarks.run import parse_args, run_benchmarks
from benchmarks.tiers import QUICK, SCENARIO, M, S
from quotaplane.core.policy import RunConfigs
from quotaplane.notices.config import load_notice_config
from quotaplane.notices.protocol import Reason
from quotaplane.registry import policy as registered
from quotaplane.sim.kinds import KINDS
from quotaplane.sim.run import simulate

POINT_KEYS = {"scale", "input_rows", "rows_by_kind", "decisions_seconds", "stage_seconds", "rows_per_second",
              "peak_rss_bytes", "jvm_heap_peak_bytes", "jvm_old_gen_peak_bytes", "bare_seconds",
              "ratio_to_bare", "stage_ratio_to_bare", "stage", "bare", "reference", "ratio_to_reference",
              "reference_rows_per_second", "floor_seconds", "ratio_to_floor", "floor"}
REFERENCE_KEYS = {"prefix_rows", "total_rows", "whole_input", "cutoff_ms", "decisions", "load_seconds",
                  "evaluate_seconds", "write_seconds", "seconds", "peak_rss_bytes", "estimated_seconds",
                  "estimated_evaluate_seconds"}
MACHINE_KEYS = {"cores", "memory_bytes", "cpu_model", "python", "java", "spark", "load_average"}


def test_linear_fit_recovers_a_line_and_scores_scatter() -> None:
    exact = linear_fit([1, 2, 4, 8], [3, 5, 9, 17])
    assert (exact.slope, exact.intercept, exact.r2) == (2.0, 1.0, 1.0)
    noisy = linear_fit([1, 2, 3], [1, 3, 2])
    assert noisy.slope == pytest.approx(0.5) and noisy.r2 == pytest.approx(0.25)
    assert linear_fit([1, 2], [5, 5]).r2 is None
    with pytest.raises(ValueError):
        linear_fit([2, 2], [1, 3])


def test_prefix_cutoff_keeps_whole_milliseconds_and_the_first_one(tmp_path: Path) -> None:
    pq.write_table(pa.table({"ts_ms": [5, 5, 5]}), tmp_path / "part-00000.parquet")
    pq.write_table(pa.table({"ts_ms": [6, 7]}), tmp_path / "part-00001.parquet")
    data = ds.dataset(str(tmp_path), format="parquet")
    assert cutoff_time(data, "ts_ms", 1) == 6  # row 1 is at the first time: the first time is kept whole
    assert cutoff_time(data, "ts_ms", 3) == 6
    assert cutoff_time(data, "ts_ms", 4) == 7
    assert cutoff_time(data, "ts_ms", 5) is None  # no row 5: the whole input


def test_kind_factors_follow_fleet_width_and_span() -> None:
    factors = kind_factors(S.describe(), M.describe())
    assert factors["volumes"] == pytest.approx(200 / 12)  # same days and interval, 200 vs 12 volumes
    assert factors["membership"] == pytest.approx(50 / 6)
    assert factors["client_requests"] == pytest.approx(5000 / 200 / 24)  # one hour of M vs a day of S
    assert factors["backlog_snapshots"] == pytest.approx(500 / 8 / 24)
    assert factors["producer_traffic"] == pytest.approx(500 / 8 / 24)  # one producer per Pulsar partition
    assert {k for p in POLICIES.values() for k in p.kinds()} <= set(factors)


def test_every_policy_has_a_stage_a_config_a_reference_runner_and_simulated_inputs(tmp_path: Path) -> None:
    assert list(POLICIES) == ["storage", "clients", "topics", "backlog", "notices"]
    assert [p.name for p in parse_args([]).policies] == list(POLICIES)
    written = configs.write(QUICK, 1.0, tmp_path)
    for spec in POLICIES.values():
        stage = registered(spec.name)
        assert stage.inputs[0].name == spec.main.kind
        assert set(spec.kinds()) <= set(KINDS)
        assert spec.name in reference.RUNNERS
        path = getattr(written, spec.config_field)
        assert path is not None and path.is_file()
        assert stage.load_config(RunConfigs(**{spec.config_field: path})) is not None
    notices = POLICIES["notices"]
    assert notices.config_field == "notices"
    assert [(i.kind, i.time_col, i.keys, i.value_col) for i in notices.inputs] == [
        ("producer_traffic", "ts_ms", ("broker",), "bytes")]
    assert notices.main.bucket_ms({}) == 1_000


def test_notices_config_is_breached_for_several_reasons_on_tier_s(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tier = replace(S, window_hours=6.0)  # six hours of S's producers
    config = configs.write(tier, 1.0, tmp_path / "config").notices
    assert config is not None
    cfg = load_notice_config(config)
    assert len(cfg.topic_rates) == 2 and len(cfg.namespace_rates) == 1 and len(cfg.group_rates) == 1
    assert cfg.broker_rate.bytes_per_s > 0 and cfg.max_pending_bytes_per_thread > 0
    data = tmp_path / "data"
    simulate(SCENARIO, data, tier.overrides(1.0), kinds=["producer_traffic"])
    out = tmp_path / "notices.jsonl"
    assert reference.main(["--policy", "notices", "--config", str(config), "--input",
                           f"producer_traffic={data / 'producer_traffic'}", "--out", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["decisions"] > 0 and {"load", "evaluate", "write", "peak_rss_bytes"} <= set(report)
    reasons = {json.loads(line)["reason"] for line in out.read_text().splitlines()}
    assert reasons == {r.name for r in Reason} - {Reason.ConnectionPendingMessagesBreach.name}


def test_options_reject_unknown_names() -> None:
    with pytest.raises(SystemExit):
        parse_args(["--policies", "storage,nope"])
    with pytest.raises(SystemExit):
        parse_args(["--tier", "XL"])
    with pytest.raises(SystemExit):
        parse_args(["--scales", "1,0"])
    quick = parse_args(["--quick"])
    assert quick.docs is None and [t.name for t in quick.tiers] == ["S"] and quick.scales == [1.0, 2.0]


def test_docs_update_keeps_the_hand_written_text(tmp_path: Path) -> None:
    doc = tmp_path / "performance.md"
    doc.write_text(f"# Performance\n\nintro\n\n{docs.BEGIN}\nold\n{docs.END}\n\nafter\n")
    docs.update({}, doc)
    text = doc.read_text()
    assert text.startswith("# Performance\n\nintro\n\n") and text.endswith("\n\nafter\n")
    assert "old" not in text and "No results yet" in text


@pytest.mark.spark
def test_quick_run_writes_results_extrapolation_and_docs(spark: object, tmp_path: Path) -> None:
    doc = tmp_path / "performance.md"
    opts = parse_args(["--quick", "--policies", "topics", "--scales", "1,2", "--no-warmup",
                       "--reference-rows", "100", "--data-dir", str(tmp_path / "data"),
                       "--work-dir", str(tmp_path / "work"), "--results-dir", str(tmp_path / "results"),
                       "--docs", str(doc)])
    outcome = run_benchmarks(opts, spark=spark, stream=None)
    assert not outcome.failed
    [measured] = sorted((tmp_path / "results").glob("S-quick-*.json"))
    [estimated] = sorted((tmp_path / "results").glob("L-quick-*.json"))
    assert set(outcome.written) == {measured, estimated, doc}

    result = json.loads(measured.read_text())
    assert result["tier"]["name"] == "S-quick" and result["quick"] is True
    assert set(result["machine"]) >= MACHINE_KEYS
    assert result["scales"] == [1.0, 2.0]
    bench = result["policies"]["topics"]
    assert "error" not in bench
    points = bench["points"]
    assert [p["scale"] for p in points] == [1.0, 2.0]
    for p in points:
        assert set(p) >= POINT_KEYS
        assert set(p["reference"]) >= REFERENCE_KEYS
        assert p["input_rows"] == p["rows_by_kind"]["topic_requests"] > 0
        assert p["reference"]["prefix_rows"] < p["reference"]["total_rows"] == p["input_rows"]
        assert p["reference"]["whole_input"] is False
        assert p["bare"]["output_rows"] > 0 and p["stage"]["steps"]
        assert p["stage"]["run_seconds"] == [p["stage_seconds"]]  # one run: its own times
        assert p["stage"]["run_decisions_seconds"] == [p["decisions_seconds"]]
        # the quick tier's few hundred requests: the stage runs as `quotaplane run` would run it
        assert p["stage"]["expressions"] == "interpreted"
        assert p["floor"]["output_rows"] == p["input_rows"]  # a row per request, as the decisions
        assert p["ratio_to_floor"] == p["decisions_seconds"] / p["floor_seconds"]
    assert points[1]["input_rows"] > points[0]["input_rows"]
    assert {"decisions", "stage", "bare", "floor", "reference"} <= set(bench["fits"])
    assert {t["metric"] for t in bench["targets"]} == {"ratio_to_bare", "ratio_to_floor",
                                                        "stage_ratio_to_decisions", "ratio_to_reference"}
    # the whole stage against its decisions is judged from 4x on only: not at these scales
    (stage_target,) = [t for t in bench["targets"] if t["metric"] == "stage_ratio_to_decisions"]
    assert stage_target["by_scale"] == {}

    extrapolation = json.loads(estimated.read_text())
    assert extrapolation["extrapolated"] is True and extrapolation["from"]["tier"] == "S-quick"
    topics = extrapolation["policies"]["topics"]
    assert topics["input_rows"] > points[1]["input_rows"] and topics["beyond_largest_measured"] > 1

    text = doc.read_text()
    assert docs.BEGIN in text and docs.END in text
    assert "### Tier S-quick" in text and "### Tier L-quick (extrapolated)" in text
    assert "| topics | 1 |" in text


def _stage_run(seconds: float, decisions: float, rss: int, heap: int | None,
               old: int | None) -> stages.StageRun:
    return stages.StageRun(seconds, decisions, {"step": decisions}, rss, heap, old, [], {"at": seconds})


def test_repeated_stage_runs_keep_the_fastest_the_highest_peaks_and_every_runs_times() -> None:
    runs = [_stage_run(9.0, 8.0, 100, 50, None), _stage_run(5.0, 4.0, 300, None, 7),
            _stage_run(5.0, 3.0, 200, 60, 5), _stage_run(6.0, 2.5, 150, 40, 9)]
    best = stages.fastest(runs)
    # the fastest whole stage (the first of equals), not the fastest decisions
    assert (best.seconds, best.decisions_seconds, best.summary) == (5.0, 4.0, {"at": 5.0})
    assert (best.peak_rss_bytes, best.jvm_heap_peak_bytes, best.jvm_old_gen_peak_bytes) == (300, 60, 9)
    assert best.run_seconds == [9.0, 5.0, 5.0, 6.0]
    assert best.run_decisions_seconds == [8.0, 4.0, 3.0, 2.5]
    # without a local JVM (Spark Connect) no heap is measured
    alone = stages.fastest([_stage_run(1.0, 1.0, 10, None, None)])
    assert (alone.jvm_heap_peak_bytes, alone.jvm_old_gen_peak_bytes) == (None, None)
    assert alone.run_seconds == [1.0] and alone.run_decisions_seconds == [1.0]


def test_repeated_bare_runs_keep_each_inputs_fastest_and_the_highest_peak() -> None:
    runs = [stages.BareRun(5.0, 100, 7, {"a": 2.0, "b": 3.0}),
            stages.BareRun(4.5, 300, 7, {"a": 3.0, "b": 1.5}),
            stages.BareRun(6.0, 200, 7, {"a": 2.5, "b": 3.5})]
    best = stages.fastest_bare(runs)
    # each input's fastest run, summed: 2.0 + 1.5, faster than any one round
    assert (best.seconds, best.per_input, best.peak_rss_bytes, best.output_rows) == (
        3.5, {"a": 2.0, "b": 1.5}, 300, 7)
    # a floor job times its inputs together
    floor = stages.fastest_bare([stages.BareRun(2.0, 10, 3), stages.BareRun(1.5, 5, 3)])
    assert (floor.seconds, floor.peak_rss_bytes, floor.per_input) == (1.5, 10, {})


def test_a_points_jobs_take_turns_one_run_of_each_per_round(monkeypatch, tmp_path: Path) -> None:
    calls: list[str] = []

    def job(name: str, result: object):
        def run(*_args: object) -> object:
            calls.append(name)
            return result
        return run

    monkeypatch.setattr(stages, "warm_page_cache", lambda *_: None)
    monkeypatch.setattr(stages, "run_bare", job("bare", stages.BareRun(1.0, 1, 1, {"x": 1.0})))
    monkeypatch.setattr(stages, "run_floor", job("floor", stages.BareRun(2.0, 1, 1)))
    monkeypatch.setattr(stages, "run_stage", job("stage", _stage_run(3.0, 2.0, 1, None, None)))
    monkeypatch.setattr(run_module.prefix, "prepare", lambda *_: None)
    reference = SimpleNamespace(seconds=1.0, prefix_rows=1, estimated_seconds=1.0)
    monkeypatch.setattr(run_module.prefix, "run", job("reference", reference))
    monkeypatch.setattr(run_module.results, "point", lambda *a: a)

    class Data:
        scale = 1.0

        def rows(self, kind: str) -> int:
            return 1

    opts = parse_args(["--repeat", "3"])
    point = run_module._measure_point(None, opts, POLICIES["backlog"], Data(), RunConfigs(), tmp_path,
                                      lambda _: None)
    assert calls == ["bare", "floor", "stage"] * 3 + ["reference"]
    stage, bare, floor = point[3], point[4], point[6]  # `results.point`'s arguments
    assert (stage.run_seconds, bare.seconds, floor.seconds) == ([3.0, 3.0, 3.0], 1.0, 2.0)


def test_latest_results_are_the_files_named_after_their_tier(tmp_path: Path) -> None:
    def write(name: str, document: dict[str, object]) -> None:
        (tmp_path / f"{name}.json").write_text(json.dumps(document))

    write("S-2026-11-22", {"tier": {"name": "S"}, "policies": {}})
    write("S-2026-11-23", {"tier": {"name": "S"}, "policies": {"topics": {}}})
    write("notices-S-2026-11-24", {"tier": {"name": "S"}, "policies": {"notices": {}}})
    write("forecast-2026-11-24", {"scenarios": []})
    latest = results.latest(tmp_path)
    assert set(latest) == {"S"} and latest["S"]["file"] == "S-2026-11-23.json"


def test_extrapolate_skips_policies_without_a_curve() -> None:
    measured = {"tier": S.describe(), "policies": {"topics": {"points": [], "fits": None}}}
    assert extrapolate(measured, M.describe())["policies"] == {}


@pytest.mark.spark
def test_quick_run_of_the_notices_policy(spark: object, tmp_path: Path) -> None:
    opts = parse_args(["--quick", "--policies", "notices", "--scales", "1", "--no-warmup", "--no-extrapolate",
                       "--data-dir", str(tmp_path / "data"), "--work-dir", str(tmp_path / "work"),
                       "--results-dir", str(tmp_path / "results")])
    outcome = run_benchmarks(opts, spark=spark, stream=None)
    assert not outcome.failed
    [measured] = outcome.written
    bench = json.loads(measured.read_text())["policies"]["notices"]
    assert bench["inputs"] == ["producer_traffic"] and bench["grouping"] == "broker, per 1 s"
    [point] = bench["points"]
    assert set(point) >= POINT_KEYS and set(point["reference"]) >= REFERENCE_KEYS
    assert point["input_rows"] == point["rows_by_kind"]["producer_traffic"] > 0
    assert point["reference"]["whole_input"] is True and point["reference"]["decisions"] > 0
    assert point["stage"]["summary"]["notices"] == point["reference"]["decisions"]
    assert point["bare"]["output_rows"] > 0
    assert point["floor"]["output_rows"] == point["input_rows"]


def test_targets_judge_the_bare_ratio_everywhere_and_the_whole_stage_from_4x() -> None:
    def point(scale: float, ratio: float | None, decisions: float, stage: float) -> dict:
        return {"scale": scale, "ratio_to_bare": ratio, "decisions_seconds": decisions,
                "stage_seconds": stage, "ratio_to_reference": 0.5}

    points = [point(1, 3.01, 2.0, 9.0), point(4, 3.0, 2.0, 3.0), point(8, None, 2.0, 3.01)]
    by_metric = {t["metric"]: t for t in results.targets("S", "backlog", points)}
    assert by_metric["ratio_to_floor"]["applies"] is False  # no point has a floor job
    bare = by_metric["ratio_to_bare"]["by_scale"]
    assert [bare[s]["met"] for s in ("1", "4", "8")] == [False, True, None]  # 3x itself is within
    stage = by_metric["stage_ratio_to_decisions"]["by_scale"]
    assert set(stage) == {"4", "8"}  # 1x is not judged: fixed costs
    assert (stage["4"]["met"], stage["8"]["met"]) == (True, False)
    assert by_metric["ratio_to_reference"]["applies"] is False  # tier S


def test_the_floor_job_is_judged_like_the_bare_job_where_a_policy_has_one() -> None:
    points = [{"scale": s, "ratio_to_bare": 9.0, "floor_seconds": 1.0, "ratio_to_floor": r,
               "decisions_seconds": 2.0, "stage_seconds": 2.0, "ratio_to_reference": 0.5}
              for s, r in ((1, 3.0), (2, 3.01))]
    (floor,) = [t for t in results.targets("M", "storage", points) if t["metric"] == "ratio_to_floor"]
    assert floor["applies"] is True and floor["limit"] == results.BARE_TARGET
    assert [floor["by_scale"][s]["met"] for s in ("1", "2")] == [True, False]


@pytest.mark.spark
def test_floor_jobs_write_a_row_per_round_and_per_check(spark: object, tmp_path: Path) -> None:
    """storage: a row per (cluster, round) of its three inputs; backlog: a row per (tick, topic);
    clients: a row per request."""
    dataset = ensure(QUICK, 1.0, tmp_path / "data")
    for policy, keys in (("storage", ("cluster", "poll_id")), ("backlog", ("topic", "ts_ms"))):
        spec = POLICIES[policy]
        run = stages.run_floor(spark, spec, dataset, tmp_path / policy)  # type: ignore[arg-type]
        assert run is not None
        expected = set()
        for kind in spec.kinds():
            table = ds.dataset(stages.input_path(dataset, kind)).to_table(columns=list(keys))
            expected |= set(zip(*(table.column(k).to_pylist() for k in keys), strict=True))
        assert run.output_rows == len(expected) > 0, policy
    clients = stages.run_floor(spark, POLICIES["clients"], dataset, tmp_path / "clients")  # type: ignore[arg-type]
    assert clients is not None
    assert clients.output_rows == ds.dataset(stages.input_path(dataset, "client_requests")).count_rows() > 0


def test_the_running_sum_floors_run_per_names_in_time_order() -> None:
    requests = pd.DataFrame({
        "broker_id": [1] * 6, "ts_ms": [30, 10, 20, 10, 5, 40],
        "quota_type": ["produce", "produce", "fetch", "produce", "produce", "produce"],
        "user": ["a", "a", "a", "a", "b", "a"], "client_id": ["c", "c", "c", "d", "c", "c"],
        "value": [3.0, 1.0, 7.0, 10.0, 100.0, 5.0]})
    out = floors.running_in_order(requests, "value", ("quota_type", "user", "client_id"))
    assert list(zip(out["quota_type"], out["user"], out["client_id"], out["ts_ms"], out["running_value"],
                    strict=True)) == [
        ("produce", "a", "c", 10, 1.0), ("produce", "a", "c", 30, 4.0), ("produce", "a", "c", 40, 9.0),
        ("produce", "a", "d", 10, 10.0), ("produce", "b", "c", 5, 100.0), ("fetch", "a", "c", 20, 7.0)]
    # the topics' and notices' floors: the whole broker's running sum, in time order
    whole = floors.running_in_order(requests.assign(bytes=[3, 1, 7, 10, 100, 5]), "bytes")
    assert list(whole["ts_ms"]) == [5, 10, 10, 20, 30, 40]
    assert list(whole["running_bytes"]) == [100, 101, 111, 118, 121, 126]


def test_readers_benchmark_checks_both_inputs_whole_and_restores_the_expression_mode(
        spark: object, tmp_path: Path) -> None:
    from benchmarks.readers import check_rounds
    from quotaplane.core.spark.expressions import FACTORY_MODE

    mode = spark.conf.get(FACTORY_MODE)  # type: ignore[attr-defined]
    result = check_rounds(spark, tmp_path, lines=30, rounds=2, interpreted=True)
    assert spark.conf.get(FACTORY_MODE) == mode  # type: ignore[attr-defined]
    assert result["lines"] == 30 and result["expressions"] == "interpreted"
    assert {k: len(v) for k, v in result["rounds"].items()} == {"bare": 2, "millis": 2, "iso": 2}
    assert set(result["ratio_to_bare"]) == {"millis", "iso"}
    first = {kind: json.loads((tmp_path / kind / "part-00000.jsonl").read_text().splitlines()[0])
             for kind in ("iso", "millis")}
    assert first["iso"]["ts"] == "2024-06-03T00:00:00.858Z" and first["millis"]["ts"] == 1717372800858
