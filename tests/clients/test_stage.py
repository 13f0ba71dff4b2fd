"""The client quota stage of `quotaplane run`: inputs, quarantine, tables, metrics, report."""

from __future__ import annotations

import json
from concurrent.futures import Future
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from quotaplane.clients.config import load_client_quotas
from quotaplane.clients.engine.evaluate import ClientQuotaEngine
from quotaplane.clients.engine.settings import ClientQuotaSettings
from quotaplane.clients.engine.storage_factor import FactorTimeline, StorageDecision
from quotaplane.clients.policy import ClientsPolicy
from quotaplane.clients.records import read_requests_jsonl
from quotaplane.clients.spark import stage as job
from quotaplane.core.errors import InputError
from quotaplane.core.exposition import render
from quotaplane.core.policy import Outputs, RunConfigs
from quotaplane.core.report import render_report
from quotaplane.core.runner import run_pipeline
from quotaplane.storage.outputs import StorageDecisions
from tests.clients.scenarios import same
from tests.support.stages import run_policy_stage

T0 = 1_767_225_600_000
QUOTAS = [
    {"entity": {"user": "<default>"}, "quotas": {"producer_byte_rate": 1000, "request_percentage": 5}},
    {"entity": {"user": "etl", "client-id": "loader"}, "quotas": {"producer_byte_rate": 20_000,
                                                                   "consumer_byte_rate": 3000}},
    {"entity": {"client-id": "<default>"}, "quotas": {"consumer_byte_rate": 5000}},
]


def _requests() -> list[dict]:
    rows = []
    for i in range(120):
        t = T0 + i * 500
        rows.append({"ts_ms": t, "broker_id": 1 + i % 2, "user": "etl", "client_id": "loader",
                     "quota_type": "produce", "value": 30_000 if i % 7 else 90_000})
        rows.append({"ts_ms": t, "broker_id": 1, "user": "alice", "client_id": "web",
                     "quota_type": "fetch", "value": 4000})
        rows.append({"ts_ms": t + 1, "broker_id": 1, "user": "alice", "client_id": "web",
                     "quota_type": "request", "value": 7.25})
    # two requests of one sharing group at the same millisecond: file order decides
    # (bob's quota is the default user's 1000 B/s; 4000 B over the padded 5 s window is 800 B/s)
    bob = {"ts_ms": T0 + 70_000, "broker_id": 2, "user": "bob", "client_id": "b", "quota_type": "produce",
           "value": 4000}
    rows += [bob, dict(bob)]
    rows.append({"ts_ms": T0 + 1, "broker_id": 1, "user": "carol", "client_id": "x",
                 "quota_type": "controller_mutation", "value": 3})
    return rows


@pytest.fixture
def stage_dirs(tmp_path: Path) -> tuple[Path, Path, RunConfigs]:
    telemetry = tmp_path / "telemetry"
    telemetry.mkdir()
    lines = [json.dumps(r) for r in _requests()]
    lines += ['{"ts_ms": 1, "broker_id": 1, "user": "a", "client_id": "c", "quota_type": "produce", '
              '"value": 2.5}', "not json",
              '{"ts_ms": 1, "broker_id": 1, "user": "a", "client_id": "c", "quota_type": "egress", '
              '"value": 1}']
    (telemetry / "client_requests.jsonl").write_text("\n".join(lines) + "\n")
    quotas = tmp_path / "client-quotas.json"
    quotas.write_text(json.dumps(QUOTAS))
    storage = tmp_path / "storage.properties"
    storage.write_text("quota.window.num=6\nclient.quota.value.metric.enable=true\n"
                       "client.quota.callback.static.produce=4000\n")
    return telemetry, tmp_path / "out", RunConfigs(storage=storage, client_quotas=quotas)


def _decisions(spark):
    rows = [(T0 + 20_000, 0.5, None, "cluster"), (T0 + 40_000, 0.0, 2, "local"),
            (T0 + 50_000, 1.0, None, "cluster")]
    return spark.createDataFrame(rows, "ts_ms long, throttle_factor double, observing_broker_id long, "
                                       "source string")


@pytest.mark.spark
def test_a_storage_stage_failing_before_its_decisions_stops_the_stage_and_frees_its_rows(
        spark, stage_dirs) -> None:
    telemetry, out, configs = stage_dirs
    given, storage = Outputs(), Future()
    given.expect(storage, [StorageDecisions])
    storage.set_exception(RuntimeError("the storage stage failed"))
    persisted = len(spark.sparkContext._jsc.getPersistentRDDs())
    with pytest.raises(RuntimeError, match="the storage stage failed"):
        run_policy_stage(spark, ClientsPolicy(), telemetry, out, configs, given)
    assert (out / "quarantine" / "client_requests").is_dir()  # it had read its requests
    assert len(spark.sparkContext._jsc.getPersistentRDDs()) == persisted


@pytest.mark.spark
def test_stage_outputs_agree_with_the_reference(spark, stage_dirs) -> None:
    telemetry, out, configs = stage_dirs
    given = Outputs()
    given.provide(StorageDecisions(_decisions(spark)))
    ctx, result, _ = run_policy_stage(spark, ClientsPolicy(), telemetry, out, configs, given)
    registry = ctx.registry
    assert result.name == "clients"
    counts = result.read_counts[0]
    assert (counts.read, counts.used, counts.quarantined) == (366, 363, 3)
    quarantine = spark.read.parquet(str(out / "quarantine" / "client_requests"))
    reasons = sorted(r["reason"] for r in quarantine.collect())
    assert reasons == ["quota_type must be one of produce, fetch, request, controller_mutation",
                       "unparsable record",
                       "value must be a whole number for produce, fetch and controller_mutation"]

    # the reference engine on the same rows, settings and decisions
    settings = ClientQuotaSettings(window_num=6, quota_value_metric=True, storage_combined=True,
                                   static_produce=4000.0)
    timeline = FactorTimeline([StorageDecision(T0 + 20_000, 0.5), StorageDecision(T0 + 40_000, 0.0, 2),
                               StorageDecision(T0 + 50_000, 1.0)])
    requests_path = telemetry / "client_requests.jsonl"
    good = [line for line in requests_path.read_text().splitlines()[:363]]
    (out.parent / "good.jsonl").write_text("\n".join(good) + "\n")
    expected = ClientQuotaEngine(load_client_quotas(configs.client_quotas), settings, timeline).evaluate(
        read_requests_jsonl(out.parent / "good.jsonl"))
    table = spark.read.parquet(str(out / job.DECISIONS_TABLE))
    assert "config_id" not in table.columns and "quota_value" in table.columns
    got = sorted((r.asDict() for r in table.collect()),
                 key=lambda r: (r["ts_ms"], r["broker_id"], r["quota_type"], r["user"], r["seq"] or 0))
    want = sorted(expected, key=lambda o: (o.ts_ms, o.broker_id, o.quota_type, o.user, o.order))
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        for name in ("ts_ms", "broker_id", "user", "quota_type", "tag_user", "tag_client_id", "quota_limit",
                     "rate", "throttle_time_ms", "throttle_factor", "quota_value", "quota_source"):
            assert same(getattr(w, name), g[name]), (name, w, g)
    bob = [o for o in expected if o.user == "bob"]
    assert [o.throttle_time_ms > 0 for o in bob] == [False, True]  # the second of the tie is throttled

    summary = result.summary
    assert summary["requests"] == 363 and summary["throttled_requests"] == sum(o.throttled for o in expected)
    assert summary["throttle_factor_min"] == 0.0 and summary["settings"]["quota.window.num"] == 6
    intervals = spark.read.parquet(str(out / job.INTERVALS_TABLE))
    assert "quota_value" in intervals.columns and intervals.count() > 0
    standing = spark.read.parquet(str(out / job.STANDING_TABLE))
    assert standing.where(F.col("standing") == "over").count() == summary["over_quota_groups"] > 0

    text = render(registry)
    assert 'quotaplane_kafka_server_produce_byte_rate{broker_id="1",client_id="loader",user="etl"}' in text
    for family in ("produce_quota_value", "fetch_throttle_time", "request_request_time",
                   "controllermutation_tokens"):
        assert f"quotaplane_kafka_server_{family}" in text
    assert ('quotaplane_client_throttled_requests_total{broker_id="1",client_id="web",quota_type="fetch"'
            in text)
    html = render_report("r", "s", result.sections).replace("<wbr>", "")  # no line break hints
    assert "Furthest over their quota" in html and "Storage throttle factor and client produce limits" in html
    assert "Client throttling over time" in html and "data:image/png;base64" in html
    assert len(result.console) == 3 and "furthest over" in result.console[1]


def test_stage_skips_without_its_input_or_config(tmp_path: Path) -> None:
    assert ClientsPolicy().load_config(RunConfigs()) is None
    quotas = tmp_path / "client-quotas.json"
    quotas.write_text(json.dumps(QUOTAS))
    with pytest.raises(InputError, match="no policy could run"):
        run_pipeline(tmp_path, RunConfigs(client_quotas=quotas), tmp_path / "out", [ClientsPolicy()],
                     spark=object(), stream=None)


@pytest.mark.spark
def test_a_parquet_input_decides_like_its_json_lines_copy(spark, tmp_path: Path) -> None:
    """Parquet is not cached: its row order comes from Parquet's row index on every scan. Ties at
    one millisecond (bob's two requests, and many more in small row groups) still follow the file
    order, so both inputs give the same decisions."""
    import pandas as pd

    # dan sends two different requests at one millisecond: which comes first changes both decisions
    dan = {"ts_ms": T0 + 80_000, "broker_id": 1, "user": "dan", "client_id": "d", "quota_type": "produce"}
    rows = [*_requests(), {**dan, "value": 9000}, {**dan, "value": 100}]
    quotas = tmp_path / "client-quotas.json"
    quotas.write_text(json.dumps(QUOTAS))
    tables = {}
    for fmt in ("jsonl", "parquet"):
        telemetry = tmp_path / fmt
        telemetry.mkdir()
        if fmt == "jsonl":
            (telemetry / "client_requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        else:  # small row groups: the row index must run on across them
            pd.DataFrame(rows).to_parquet(telemetry / "client_requests.parquet", row_group_size=16)
        ctx, result, _ = run_policy_stage(spark, ClientsPolicy(), telemetry, tmp_path / f"out-{fmt}",
                                          RunConfigs(client_quotas=quotas))
        assert result.read_counts[0].quarantined == 0
        tables[fmt] = sorted(tuple(r) for r in spark.read.parquet(str(ctx.out_dir / job.DECISIONS_TABLE))
                             .collect())
    assert tables["parquet"] == tables["jsonl"] and len(tables["jsonl"]) == len(rows)
