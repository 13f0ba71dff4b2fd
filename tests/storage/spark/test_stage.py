"""The storage stage of `quotaplane run`: files in; decisions, quarantine, metrics, summary, report out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quotaplane.core.errors import InputError
from quotaplane.core.exposition import render
from quotaplane.core.policy import RunConfigs
from quotaplane.core.report import render_report
from quotaplane.core.runner import run_pipeline
from quotaplane.storage.config import load_storage_config
from quotaplane.storage.engine import evaluate_rounds, group_rounds
from quotaplane.storage.outputs import LastVolumeTime, StorageDecisions
from quotaplane.storage.policy import StoragePolicy
from quotaplane.storage.records import COLLECTION_ERRORS, MEMBERSHIP, VOLUMES
from tests.support.stages import run_policy_stage

pytestmark = pytest.mark.spark
S = "client.quota.callback.static."
GB = 10**9
T0 = 1_717_372_800_000  # 2024-06-03T00:00:00Z
MIN = 60_000


def _telemetry(root: Path) -> None:
    """Three brokers, one round a minute for 10 minutes. Broker 3's disk fills (replication);
    round 4 fails; broker 2 is missing from round 6; and a few malformed rows."""
    vols, members, errors = [], [], []
    for poll in range(10):
        ts = T0 + poll * MIN
        for b in (1, 2, 3):
            members.append({"ts": ts, "cluster": "c", "broker_id": b, "poll_id": poll})
            if poll == 4 or (poll == 6 and b == 2):
                continue
            available = 100 * GB - poll * 10 * GB if b == 3 else 80 * GB
            vols.append({"ts": ts, "cluster": "c", "broker_id": b, "log_dir": "/data",
                         "total_bytes": 100 * GB, "available_bytes": available, "poll_id": poll})
            if b == 1:  # the observing broker has a second, emptier disk
                vols.append({"ts": ts, "cluster": "c", "broker_id": b, "log_dir": "/data2",
                             "total_bytes": 100 * GB, "available_bytes": 90 * GB, "poll_id": poll})
    errors.append({"ts": T0 + 4 * MIN, "reason": "DESCRIBE_LOG_DIR_ERROR", "cluster": "c", "poll_id": 4})
    (root / "volumes").mkdir(parents=True)
    lines = [json.dumps(v) for v in vols]
    lines += ['{"ts": 1, "cluster": "c", "broker_id": 1, "log_dir": "/x", "total_bytes": 5, '
              '"available_bytes": 6}',
              '{"ts": "yesterday", "cluster": "c", "broker_id": 1, "log_dir": "/x", "total_bytes": 5, '
              '"available_bytes": 1}',
              "not json"]
    (root / "volumes" / "part-0.jsonl").write_text("\n".join(lines) + "\n")
    (root / "membership.jsonl").write_text("\n".join(json.dumps(m) for m in members) + "\n")
    csv = "ts,reason,cluster,poll_id\n" + "".join(f"{e['ts']},{e['reason']},c,4\n" for e in errors)
    (root / "collection_errors.csv").write_text(csv + f"{T0},,c,4\n")


@pytest.fixture(scope="module")
def stage(spark, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("storage-stage")
    telemetry = root / "telemetry"
    _telemetry(telemetry)
    cluster = root / "cluster.properties"
    cluster.write_text(f"{S}storage.volume.source=cluster\n{S}storage.check-interval=60000\n"
                       f"{S}storage.perVolumeLimit.availableRatioBelow.soft=0.5\n"
                       f"{S}storage.perVolumeLimit.availableBytesBelow.hard=30000000000\n"
                       f"{S}fallback.throttle.factor=0.5\n{S}produce=1000\n")
    local = root / "local.properties"
    local.write_text(f"{S}storage.volume.source=local\n{S}storage.soft=150000000000\n"
                     f"{S}storage.hard=190000000000\n")
    configs = RunConfigs(storage=cluster, storage_compare=local)
    ctx, result, outputs = run_policy_stage(spark, StoragePolicy(), telemetry, root / "out", configs)
    return ctx, result, telemetry, configs, outputs


def _reference(config_path: Path, telemetry: Path) -> list[dict]:
    def rows(path: Path, schema) -> list[dict]:
        out = []
        for line in path.read_text().splitlines():
            try:
                out.append(schema.coerce_record(json.loads(line), "x"))
            except Exception:  # the malformed rows are quarantined by the stage
                continue
        return out

    config = load_storage_config(config_path)
    errors = [COLLECTION_ERRORS.coerce_record({"ts": T0 + 4 * MIN, "reason": "DESCRIBE_LOG_DIR_ERROR",
                                               "cluster": "c", "poll_id": 4}, "x")]
    return evaluate_rounds(config, group_rounds(rows(telemetry / "volumes" / "part-0.jsonl", VOLUMES),
                                                rows(telemetry / "membership.jsonl", MEMBERSHIP), errors,
                                                config.check_interval_ms))


def test_stage_writes_decisions_equal_to_the_reference(stage) -> None:
    ctx, _, telemetry, configs, outputs = stage
    for table, config in (("storage_decisions", configs.storage),
                          ("storage_decisions_compare", configs.storage_compare)):
        got = [r.asDict() for r in ctx.spark.read.parquet(str(ctx.out_dir / table)).collect()]
        for r in got:
            r.pop("ts")
        key = lambda r: (r["ts_ms"], r["observing_broker_id"] or 0)  # noqa: E731
        assert sorted(got, key=key) == sorted(_reference(config, telemetry), key=key)
    provided = outputs.get(StorageDecisions)
    assert provided is not None and provided.decisions.count() == 10
    # the last used volume row's time (the row at ts 1 is quarantined: more available than total)
    assert outputs.get(LastVolumeTime) == LastVolumeTime(T0 + 9 * MIN)


def test_cluster_source_throttles_while_the_local_source_does_not(stage) -> None:
    _, result, *_ = stage
    s = result.summary
    # round 4 failed and round 6 misses broker 2 (fallback 0.5); broker 3 is exactly at the soft
    # threshold in round 5 (factor 1.0) and at or past the hard one from round 7 (factor 0)
    assert s["first_throttled"] == "2024-06-03T00:04:00Z"
    assert s["first_blocked"] == "2024-06-03T00:07:00Z"
    assert s["time_throttled_seconds"] == 240.0  # rounds 4, 6, 7, 8 last a minute; 9 is the last
    assert s["time_blocked_seconds"] == 120.0  # rounds 7 and 8
    assert s["fallbacks_by_reason"] == {"DESCRIBE_LOG_DIR_ERROR": {"applied": 1, "rounds": 1},
                                        "missing_broker_data": {"applied": 1, "rounds": 1}}
    (breach,) = s["breaches"]
    assert (breach["broker_id"], breach["log_dir"]) == (3, "/data")
    assert breach["first_soft_breach"] == "2024-06-03T00:05:00Z"
    assert breach["first_hard_breach"] == "2024-06-03T00:07:00Z"
    assert breach["deepest_past_hard_bytes"] == 20 * GB
    assert s["compare"]["first_throttled"] is None and s["compare"]["source"] == "local"


def test_inputs_reconcile_and_bad_rows_are_quarantined_with_reasons(stage) -> None:
    ctx, result, *_ = stage
    counts = {c.input.rsplit("/", 1)[-1]: (c.read, c.used, c.quarantined) for c in result.read_counts}
    assert counts == {"volumes": (38, 35, 3), "membership.jsonl": (30, 30, 0),
                      "collection_errors.csv": (2, 1, 1)}
    quarantined = ctx.spark.read.parquet(str(ctx.out_dir / "quarantine" / "volumes")).collect()
    reasons = {r["reason"] for r in quarantined}
    assert reasons == {"available_bytes must not exceed total_bytes", "unparsable record",
                       "field ts=yesterday: must be epoch milliseconds or an ISO-8601 timestamp"}
    bad = ctx.spark.read.parquet(str(ctx.out_dir / "quarantine" / "collection_errors")).collect()
    assert [r["reason"] for r in bad] == ["field reason: missing required field"]
    assert not (ctx.out_dir / "quarantine" / "membership").exists()  # nothing quarantined, nothing written


def test_metrics_are_registered_for_both_configurations(stage) -> None:
    ctx, *_ = stage
    text = render(ctx.registry)
    assert ('quotaplane_storage_throttle_factor{cluster="c",config="main",observing_broker_id="",'
            'source="cluster"} 0.0') in text
    assert ('quotaplane_storage_throttling_volume{broker_id="3",cluster="c",config="main",log_dir="/data",'
            'observing_broker_id="",source="cluster"} 0.0') in text
    assert ('quotaplane_storage_fallback_throttle_factor_applied_total{cluster="c",config="main",'
            'observing_broker_id="",reason="DESCRIBE_LOG_DIR_ERROR",source="cluster"} 1.0') in text
    assert ('quotaplane_storage_active_log_dirs{cluster="c",config="main",observing_broker_id="",'
            'source="cluster"} 4.0') in text
    assert ('quotaplane_storage_total_used_bytes{cluster="c",config="compare",observing_broker_id="1",'
            'source="local"} 3e+10') in text


def test_report_section_has_its_plots_and_tables(stage) -> None:
    _, result, *_ = stage
    html = render_report("r", "s", result.sections).replace("<wbr>", "")  # no line break hints
    assert html.count("<img src=\"data:image/png;base64,") == 2
    assert "Volumes that breached a limit" in html and "DESCRIBE_LOG_DIR_ERROR" in html
    assert any("never throttled" in line for line in result.console)


def test_stage_does_not_run_without_its_configuration_or_telemetry(spark, tmp_path: Path) -> None:
    assert StoragePolicy().load_config(RunConfigs()) is None
    config = tmp_path / "x.properties"
    config.write_text(f"{S}storage.volume.source=cluster\n{S}storage.perVolumeLimit.availableBytesBelow.hard=1\n")
    with pytest.raises(InputError, match="no policy could run"):
        run_pipeline(tmp_path, RunConfigs(storage=config), tmp_path / "out", [StoragePolicy()], spark=spark,
                     stream=None)


def test_observations_are_written_only_with_detail_and_change_nothing_else(stage, tmp_path) -> None:
    ctx, result, telemetry, configs, _ = stage
    assert not (ctx.out_dir / "storage_volume_observations").exists()
    assert "volume_observations" not in result.summary["outputs"]
    detail_ctx, detailed, _ = run_policy_stage(ctx.spark, StoragePolicy(), telemetry, tmp_path / "out",
                                               configs, detail=True)
    rows = ctx.spark.read.parquet(str(detail_ctx.out_dir / "storage_volume_observations")).collect()
    # every counted observation: 10 rounds, round 4 failed (no volumes), broker 2 missing in round 6
    assert len(rows) == 9 * 4 - 1
    assert detailed.summary["outputs"]["volume_observations"].endswith("storage_volume_observations")
    without = {k: v for k, v in detailed.summary.items() if k != "outputs"}
    assert without == {k: v for k, v in result.summary.items() if k != "outputs"}
    assert render(detail_ctx.registry) == render(ctx.registry)


def test_an_error_naming_no_cluster_applies_to_every_cluster(spark, tmp_path: Path) -> None:
    """The stage learns from the errors' counting scan that a used error names no cluster (a
    quarantined one does not count): its decisions equal the reference's, where the error decides
    the round of both clusters."""
    telemetry = tmp_path / "telemetry"
    telemetry.mkdir()
    vols = [{"ts": ts, "cluster": cluster, "broker_id": 1, "log_dir": "/d", "total_bytes": 100 * GB,
             "available_bytes": available * GB} for ts in (0, MIN, 2 * MIN)
            for cluster, available in (("a", 20), ("b", 80))]
    errors = [{"ts": MIN + 1, "reason": "EXCEPTION", "cluster": None}]
    (telemetry / "volumes.jsonl").write_text("\n".join(json.dumps(v) for v in vols) + "\n")
    (telemetry / "collection_errors.jsonl").write_text(
        json.dumps(errors[0]) + "\n" + json.dumps({"ts": "later", "reason": "EXCEPTION"}) + "\n")
    config_path = tmp_path / "cluster.properties"
    config_path.write_text(f"{S}storage.volume.source=cluster\n{S}storage.check-interval=60000\n"
                           f"{S}storage.perVolumeLimit.availableBytesBelow.soft=50000000000\n"
                           f"{S}storage.perVolumeLimit.availableBytesBelow.hard=10000000000\n"
                           f"{S}fallback.throttle.factor=0.25\n")
    ctx, result, _ = run_policy_stage(spark, StoragePolicy(), telemetry, tmp_path / "out",
                                      RunConfigs(storage=config_path))
    assert [i["quarantined"] for i in result.summary["inputs"] if "collection_errors" in i["input"]] == [1]
    got = [r.asDict() for r in spark.read.parquet(str(ctx.out_dir / "storage_decisions")).collect()]
    for r in got:
        r.pop("ts")
    config = load_storage_config(config_path)
    expected = evaluate_rounds(config, group_rounds([VOLUMES.coerce_record(v, "x") for v in vols], [],
                                                    [COLLECTION_ERRORS.coerce_record(e, "x") for e in errors],
                                                    config.check_interval_ms))
    key = lambda r: (r["cluster"] or "", r["ts_ms"])  # noqa: E731
    assert sorted(got, key=key) == sorted(expected, key=key)
    assert [r["fallback_reason"] for r in sorted(got, key=key)] == [None, "EXCEPTION", None] * 2
