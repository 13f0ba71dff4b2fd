"""The client quotas evaluated incrementally (`ClientsIncremental`) decide exactly what the batch run
decides: any chunking, any order within a chunk, pickled state, storage decisions fed as the stream
feeds them (new ones before the watermark passes them, plus repeats of the ones in force)."""

from __future__ import annotations

import json
import pickle
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from quotaplane.clients.config import ClientsRunConfig
from quotaplane.clients.engine.entities import DEFAULT, ClientQuotaConfig, QuotaEntity
from quotaplane.clients.engine.evaluate import ClientQuotaEngine, ClientRequest, RequestOutcome
from quotaplane.clients.engine.storage_factor import FactorTimeline, StorageDecision, decision_order
from quotaplane.clients.incremental import (
    DECISIONS_TABLE,
    INPUT,
    STORAGE_DECISIONS,
    ClientsIncremental,
    ClientsKeyState,
    decision_row,
)
from tests.clients.scenarios import EPOCH, configs, decision_lists, request_lists
from tests.support.differential import assert_rows_equal

POLICY = ClientsIncremental()
FILES = (-7_301_115_883_310_482_001, 4_211, 98_765_432_101)  # hashes of files
Row = dict[str, Any]


# --- the batch run: the reference engine over every request, its outcomes as the table's rows ---

def batch_rows(config: ClientsRunConfig, requests: Sequence[Row], decisions: Sequence[Row]) -> list[Row]:
    """What `quotaplane run` writes in `client_request_decisions` (tests/clients/test_differential.py
    checks the Spark stage against the reference engine): requests in event time, ties by file and
    position (the stage's `_file`, `_row`); `seq` numbers a sharing group's recorded requests."""
    ordered = sorted(requests, key=lambda r: (r["ts_ms"], r["_file"], r["_position"]))
    timeline = FactorTimeline(StorageDecision(d["ts_ms"], d["throttle_factor"], d["observing_broker_id"])
                              for d in decisions)
    engine = ClientQuotaEngine(config.quotas, config.settings(config.storage_given), timeline)
    outcomes = engine.evaluate([ClientRequest(r["ts_ms"], r["broker_id"], r["user"], r["client_id"],
                                              r["quota_type"], r["value"]) for r in ordered])
    groups: dict[tuple[Any, ...], list[RequestOutcome]] = {}
    for o in outcomes:
        if o.recorded:
            groups.setdefault((o.broker_id, o.quota_type, o.tag_user, o.tag_client_id), []).append(o)
    seq = {o.order: i for members in groups.values()
           for i, o in enumerate(sorted(members, key=lambda o: o.order))}
    return [decision_row(o, seq.get(o.order)) for o in outcomes]


# --- the stream, as the driver runs it ---

def in_force(given: Sequence[Row], before: int | None) -> list[Row]:
    """The decisions in force just before a micro-batch: the latest cluster-wide one per cluster and
    the latest per observing broker (`decision_order`) among those with ts < `before`, and every
    one given with ts >= `before` (given early: a new key has not seen them)."""
    latest: dict[tuple[Any, ...], Row] = {}
    later = []
    for d in sorted(given, key=lambda d: decision_order(_decision(d))):
        if before is not None and d["ts_ms"] >= before:
            later.append(d)
            continue
        observing = d["observing_broker_id"]
        source = ("cluster", d["cluster"]) if observing is None else ("broker", observing)
        latest[source] = d
    return [*latest.values(), *later]


def _decision(d: Row) -> StorageDecision:
    return StorageDecision(d["ts_ms"], d["throttle_factor"], d["observing_broker_id"])


def stream_rows(config: ClientsRunConfig, chunks: Sequence[tuple[list[Row], list[Row], int | None]],
                rng: random.Random) -> tuple[list[Row], dict[int, ClientsKeyState]]:
    """Feed the chunks (request rows, newly decided storage decisions, watermark) key by key, with
    each key's state pickled between calls, as the driver does; returns the rows decided."""
    states: dict[int, bytes] = {}
    given: list[Row] = []
    out: list[Row] = []
    previous: int | None = None
    for requests, decisions, watermark in chunks:
        repeats = in_force(given, previous) if given else []
        given += decisions
        by_key: dict[int, list[Row]] = {}
        for r in requests:
            by_key.setdefault(r["broker_id"], []).append(r)
        for key in sorted(set(states) | set(by_key)):
            state = pickle.loads(states[key]) if key in states else POLICY.new_state(config)
            rows = list(by_key.get(key, []))
            rng.shuffle(rows)
            storage = [*repeats, *decisions]
            rng.shuffle(storage)
            advanced = POLICY.advance(config, state, {INPUT: rows, STORAGE_DECISIONS: storage}, watermark)
            assert advanced.late == []
            assert set(advanced.tables) == {DECISIONS_TABLE}
            out += advanced.tables[DECISIONS_TABLE]
            states[key] = pickle.dumps(state)
        previous = watermark
    return out, {key: pickle.loads(blob) for key, blob in states.items()}


def run_config(config: ClientQuotaConfig, props: dict[str, str] | None = None,
               storage_given: bool = False) -> ClientsRunConfig:
    return ClientsRunConfig(config, props or {}, storage_given)


@st.composite
def broker_properties(draw: st.DrawFn) -> dict[str, str]:
    props = {"quota.window.num": str(draw(st.integers(1, 4))),
             "quota.window.size.seconds": str(draw(st.integers(1, 2))),
             "controller.quota.window.num": str(draw(st.integers(1, 3))),
             "metrics.num.samples": str(draw(st.integers(1, 3))),
             "metrics.sample.window.ms": str(draw(st.sampled_from((1000, 30_000)))),
             "client.quota.value.metric.enable": draw(st.sampled_from(("true", "false")))}
    static = draw(st.sampled_from((None, "0", "300")))
    if static is not None:
        props["client.quota.callback.static.produce"] = static
    return props


@st.composite
def telemetry(draw: st.DrawFn) -> tuple[ClientsRunConfig, list[Row], list[Row]]:
    """A configuration, request rows (with `_file`, `_position`) and storage decision rows."""
    storage_given = draw(st.booleans())
    config = run_config(draw(configs()), draw(broker_properties()), storage_given)
    requests = draw(request_lists(brokers=(1, 2, 3), max_size=30))
    positions = dict.fromkeys(FILES, 0)
    rows = []
    for r in requests:
        file = draw(st.sampled_from(FILES))
        positions[file] += draw(st.integers(1, 3))
        rows.append({"ts_ms": r.ts_ms, "broker_id": r.broker_id, "user": r.user, "client_id": r.client_id,
                     "quota_type": r.quota_type, "value": r.value, "_file": file,
                     "_position": positions[file]})
    decisions = []
    if storage_given:  # no storage configuration: no storage decisions
        for d in draw(decision_lists(brokers=(None, 1, 2, 4))):
            cluster = draw(st.sampled_from(("east", "west")))
            decisions.append({"ts_ms": d.ts_ms, "throttle_factor": d.throttle_factor,
                              "observing_broker_id": d.observing_broker_id, "cluster": cluster})
    return config, rows, decisions


@st.composite
def chunkings(draw: st.DrawFn, requests: list[Row], decisions: list[Row],
              ) -> list[tuple[list[Row], list[Row], int | None]]:
    """Watermarks (non-decreasing, then None), each request in a chunk at or before the last one
    whose previous watermark it is not below, each decision given by the first chunk whose
    watermark passes it (sometimes earlier)."""
    times = sorted({r["ts_ms"] for r in requests} | {d["ts_ms"] for d in decisions} | {0, EPOCH})
    marks = sorted(draw(st.lists(st.sampled_from(times).flatmap(
        lambda t: st.sampled_from((t - 1, t, t + 1, t + 1000))), max_size=6)))
    watermarks: list[int | None] = [*marks, None]
    chunks: list[tuple[list[Row], list[Row], int | None]] = [([], [], w) for w in watermarks]
    for r in requests:
        last = max(i for i in range(len(watermarks)) if i == 0 or watermarks[i - 1] <= r["ts_ms"])
        chunks[draw(st.integers(0, last))][0].append(r)
    for d in decisions:
        due = next(i for i, w in enumerate(watermarks) if w is None or d["ts_ms"] < w)
        chunks[draw(st.integers(0, due)) if draw(st.booleans()) else due][1].append(d)
    return chunks


@given(st.data())
def test_any_chunking_decides_what_the_batch_run_decides(data: st.DataObject) -> None:
    config, requests, decisions = data.draw(telemetry())
    chunks = data.draw(chunkings(requests, decisions))
    got, states = stream_rows(config, chunks, random.Random(data.draw(st.integers(0, 2**32))))
    assert_rows_equal(batch_rows(config, requests, decisions), got, label=DECISIONS_TABLE)
    names = [c.name for c in POLICY.tables[0].columns]
    assert all(list(row) == names for row in got)
    assert all(not s.pending for s in states.values())


@given(telemetry(), st.data())
def test_the_state_keeps_only_what_can_still_matter(case: tuple, data: st.DataObject) -> None:
    config, requests, decisions = case
    chunks = data.draw(chunkings(requests, decisions))
    chunks[-1] = (chunks[-1][0], chunks[-1][1], max((w for *_, w in chunks[:-1] if w is not None),
                                                    default=0))
    _, states = stream_rows(config, chunks, random.Random(0))
    for key, state in states.items():
        through = state.through
        assert all(r["ts_ms"] >= through for r in state.pending)
        old = [d for d in state.decisions if d.ts_ms < through]
        assert len(old) <= 2  # the cluster-wide one and the broker's own in force at `through`
        assert all(d.observing_broker_id in (None, key) for d in state.decisions)


# --- boundaries ---

QUOTAS = ClientQuotaConfig({QuotaEntity(DEFAULT, None): {"producer_byte_rate": 1000.0,
                                                         "request_percentage": 5.0}})


def request(ts: int, value: float = 4000.0, position: int = 0, quota_type: str = "produce",
            broker: int = 1) -> Row:
    return {"ts_ms": ts, "broker_id": broker, "user": "bob", "client_id": "b", "quota_type": quota_type,
            "value": value, "_file": 1, "_position": position}


def test_a_request_at_the_watermark_is_not_final() -> None:
    config = run_config(QUOTAS)
    state = POLICY.new_state(config)
    first = POLICY.advance(config, state, {INPUT: [request(EPOCH + 1000)]}, EPOCH + 1000)
    assert first.tables == {DECISIONS_TABLE: []} and len(state.pending) == 1
    state = pickle.loads(pickle.dumps(state))
    second = POLICY.advance(config, state, {}, EPOCH + 1001)
    assert_rows_equal(batch_rows(config, [request(EPOCH + 1000)], []), second.tables[DECISIONS_TABLE])
    assert state.pending == [] and state.through == EPOCH + 1001


def test_empty_input() -> None:
    config = run_config(QUOTAS)
    state = POLICY.new_state(config)
    assert POLICY.advance(config, state, {}, 5).tables == {DECISIONS_TABLE: []}
    assert POLICY.advance(config, state, {INPUT: [], STORAGE_DECISIONS: []}, None).tables == {
        DECISIONS_TABLE: []}
    assert POLICY.decided_through(state, None) is None


def test_one_request_and_watermark_none_decide_everything() -> None:
    config = run_config(QUOTAS, {"client.quota.value.metric.enable": "true"})
    rows = [request(EPOCH + 5, 9950.0), request(EPOCH + 5, 100.0, position=1),
            request(EPOCH, 7.5, 0, "request")]
    for some in ([rows[0]], rows):
        state = POLICY.new_state(config)
        out = POLICY.advance(config, state, {INPUT: list(reversed(some))}, None)
        assert_rows_equal(batch_rows(config, some, []), out.tables[DECISIONS_TABLE])
    got = sorted(out.tables[DECISIONS_TABLE], key=lambda r: (r["ts_ms"], r["seq"]))
    assert [r["seq"] for r in got] == [0, 0, 1] and got[1]["quota_value"] == 1000.0
    # the tie at one millisecond follows the file position: 9950 B first (995 B/s over the padded
    # 10 s window), then 100 B (1005 B/s: throttled)
    assert [(r["value"], r["throttled"]) for r in got[1:]] == [(9950.0, False), (100.0, True)]


def test_a_request_before_the_last_watermark_is_set_aside_as_late() -> None:
    config = run_config(QUOTAS)
    state = POLICY.new_state(config)
    POLICY.advance(config, state, {INPUT: [request(EPOCH + 10)]}, EPOCH + 20)
    out = POLICY.advance(config, state, {INPUT: [request(EPOCH + 19), request(EPOCH + 20)]}, None)
    assert [late["row"]["ts_ms"] for late in out.late] == [EPOCH + 19]
    assert out.late[0]["input"] == INPUT and out.late[0]["reason"]
    assert [r["ts_ms"] for r in out.tables[DECISIONS_TABLE]] == [EPOCH + 20]


def test_storage_decisions_repeated_change_nothing_and_apply_from_their_time() -> None:
    config = run_config(QUOTAS, {"client.quota.callback.static.produce": "4000"}, storage_given=True)
    decisions = [{"ts_ms": EPOCH + 100, "throttle_factor": 0.5, "observing_broker_id": None, "cluster": "c"},
                 {"ts_ms": EPOCH + 200, "throttle_factor": 0.25, "observing_broker_id": 1, "cluster": "c"},
                 {"ts_ms": EPOCH + 200, "throttle_factor": 0.0, "observing_broker_id": 2, "cluster": "c"},
                 {"ts_ms": EPOCH + 300, "throttle_factor": None, "observing_broker_id": None, "cluster": "c"}]
    requests = [request(EPOCH + t, 10.0, position=t) for t in (99, 100, 199, 200, 300)]
    state = POLICY.new_state(config)
    out = []
    for chunk, (rows, storage, watermark) in enumerate((
            (requests[:2], decisions[:1], EPOCH + 150),
            (requests[2:], decisions[:1] * 2 + decisions[1:3], EPOCH + 250),
            ([], decisions, None))):
        advanced = POLICY.advance(config, state, {INPUT: rows, STORAGE_DECISIONS: storage}, watermark)
        out += advanced.tables[DECISIONS_TABLE]
        state = pickle.loads(pickle.dumps(state))
        if chunk == 1:  # broker 2's decision never applies; the cluster one is superseded at 250
            assert state.decisions == [StorageDecision(EPOCH + 100, 0.5),
                                       StorageDecision(EPOCH + 200, 0.25, 1)]
    factors = [r["throttle_factor"] for r in sorted(out, key=lambda r: r["ts_ms"])]
    assert factors == [1.0, 0.5, 0.5, 0.25, 0.25]
    assert_rows_equal(batch_rows(config, requests, decisions[:3]), out)


# --- the declared table against the one the batch Spark stage writes ---

SPARK_KINDS = {"long": "bigint", "int": "int", "double": "double", "string": "string",
               "boolean": "boolean", "timestamp_ms": "timestamp"}


@pytest.mark.spark
def test_declared_columns_are_the_batch_tables(spark, tmp_path: Path) -> None:
    from quotaplane.clients.policy import ClientsPolicy
    from quotaplane.clients.records import CLIENT_REQUESTS
    from quotaplane.clients.spark import stage as job
    from quotaplane.core.jsonl import read_records
    from quotaplane.core.policy import Outputs, RunConfigs
    from quotaplane.storage.outputs import StorageDecisions
    from tests.support.stages import run_policy_stage

    telemetry_dir = tmp_path / "telemetry"
    telemetry_dir.mkdir()
    lines = [{"ts_ms": EPOCH + 400 * i, "broker_id": 1 + i % 2, "user": "bob", "client_id": "b",
              "quota_type": ("produce", "fetch", "request")[i % 3], "value": 700.0 + i} for i in range(30)]
    lines += [{**lines[4], "value": 9000}, {**lines[4], "value": 1}]  # a tie at one millisecond
    path = telemetry_dir / "client_requests.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    (tmp_path / "quotas.json").write_text(json.dumps([{"entity": {"user": "<default>"}, "quotas": {
        "producer_byte_rate": 1000, "consumer_byte_rate": 900}}]))
    (tmp_path / "storage.properties").write_text(
        "client.quota.value.metric.enable=true\nquota.window.num=3\n")
    configs = RunConfigs(storage=tmp_path / "storage.properties", client_quotas=tmp_path / "quotas.json")
    decisions = [(EPOCH + 2000, 0.5, None, "c"), (EPOCH + 6000, 0.25, 2, "c")]
    given = Outputs()
    given.provide(StorageDecisions(spark.createDataFrame(
        decisions, "ts_ms long, throttle_factor double, observing_broker_id long, cluster string")))
    ctx, _, _ = run_policy_stage(spark, ClientsPolicy(), telemetry_dir, tmp_path / "out", configs, given)
    table = spark.read.parquet(str(ctx.out_dir / job.DECISIONS_TABLE))

    declared = {t.name: t for t in POLICY.tables}
    assert set(declared) == {job.DECISIONS_TABLE}
    assert [(c.name, SPARK_KINDS[c.kind]) for c in declared[job.DECISIONS_TABLE].columns] == [
        (f.name, f.dataType.simpleString()) for f in table.schema.fields]

    # and the rows: the stream over the same file equals the Spark table, `seq` included
    config = ClientsPolicy().load_config(configs)
    assert config is not None
    rows = [{**row, "_file": 5, "_position": number}
            for number, _, row in read_records(path, CLIENT_REQUESTS)]
    storage = [dict(zip(("ts_ms", "throttle_factor", "observing_broker_id", "cluster"), d, strict=True))
               for d in decisions]
    got = []
    for key in (1, 2):
        state = POLICY.new_state(config)
        got += POLICY.advance(config, state, {INPUT: [r for r in rows if r["broker_id"] == key],
                                              STORAGE_DECISIONS: storage}, None).tables[DECISIONS_TABLE]
    assert_rows_equal(table, got, label=DECISIONS_TABLE)
