"""The streaming form of topic bytes-in quotas: any chunking of the requests, with the state pickled
between calls, gives exactly the `topic_decisions` rows of the batch run (the reference engine's
decisions, which tests/topics/test_differential.py checks against the Spark stage)."""

from __future__ import annotations

import pickle
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from quotaplane.core.incremental import Advance
from quotaplane.topics.config import TopicQuotaConfig, parse_topics_config
from quotaplane.topics.engine.evaluate import TopicRequest
from quotaplane.topics.engine.meter import Meter
from quotaplane.topics.incremental import DECISIONS_TABLE, TopicsIncremental, TopicsState
from quotaplane.topics.records import TOPIC_REQUESTS
from tests.support.differential import assert_rows_equal
from tests.topics.strategies import fleets
from tests.topics.test_differential import reference_tables

POLICY = TopicsIncremental()
TABLE = DECISIONS_TABLE.name
COLUMNS = [c.name for c in DECISIONS_TABLE.columns]
CONFIG = parse_topics_config({"total.bytes.in.per.sec.threshold": "1000", "message.max.bytes": "5000",
                              "topic.a.bytes.in.per.sec.threshold": "400"})


def batch_rows(config: TopicQuotaConfig, requests: Sequence[TopicRequest]) -> list[Any]:
    """What the batch run writes to `topic_decisions` (the differential tests' reference mapping)."""
    return list(reference_tables((config, None), requests)["decisions"]) if requests else []


def row(r: TopicRequest, file: int = 0, position: int = 0) -> dict[str, Any]:
    return {"ts_ms": r.ts_ms, "broker_id": r.broker_id, "topic": r.topic, "bytes": r.bytes,
            "_file": file, "_position": position}


def step(state: TopicsState, config: TopicQuotaConfig, rows: list[dict[str, Any]],
         watermark_ms: int | None) -> tuple[TopicsState, Advance]:
    """One `advance`, the state through pickle before and after (as the stream's checkpoint)."""
    state = pickle.loads(pickle.dumps(state))
    out = POLICY.advance(config, state, {TOPIC_REQUESTS.name: rows}, watermark_ms)
    assert set(out.tables) == {TABLE}
    for decided in out.tables[TABLE]:
        assert list(decided) == COLUMNS
    return pickle.loads(pickle.dumps(state)), out


@st.composite
def chunked(draw: Any) -> tuple[TopicQuotaConfig, list[TopicRequest], list[int], list[list[dict[str, Any]]]]:
    """A fleet, non-decreasing watermarks (near request times, on them, or anywhere), and for each
    call the rows it brings (each row by the call before the first watermark above it, each chunk
    shuffled); the last call has watermark None."""
    config, requests = draw(fleets(brokers=3))
    times = sorted({r.ts_ms for r in requests})
    shared = sorted(t for (_, t), n in Counter((r.broker_id, r.ts_ms) for r in requests).items() if n > 1)
    on = st.sampled_from(shared) if shared else st.sampled_from(times)  # a millisecond of several requests
    near = st.one_of(on, st.sampled_from(times).flatmap(lambda t: st.sampled_from((t - 1, t, t + 1))))
    watermarks = sorted(draw(st.lists(st.one_of(near, st.integers(times[0] - 10, times[-1] + 10)),
                                      max_size=8)))
    files = draw(st.lists(st.integers(0, 2), min_size=len(requests), max_size=len(requests)))
    calls: list[list[dict[str, Any]]] = [[] for _ in range(len(watermarks) + 1)]
    for position, (r, file) in enumerate(zip(requests, files, strict=True)):
        last = next((i for i, w in enumerate(watermarks) if w > r.ts_ms), len(watermarks))
        # often as late as allowed: rows of a millisecond at a watermark then straddle two calls
        call = draw(st.one_of(st.just(last), st.integers(0, last)))
        calls[call].append(row(r, file, position))
    return config, requests, watermarks, [draw(st.permutations(c)) for c in calls]


@given(chunked(), st.randoms(use_true_random=False))
def test_any_chunking_gives_the_batch_decisions(generated: Any, rnd: Any) -> None:
    config, requests, watermarks, calls = generated
    states: dict[int, TopicsState] = {}
    produced: list[dict[str, Any]] = []
    for watermark, rows in zip([*watermarks, None], calls, strict=True):
        by_broker: dict[int, list[dict[str, Any]]] = {}
        for r in rows:
            by_broker.setdefault(r["broker_id"], []).append(r)
        for broker_id in {*states, *by_broker}:
            if watermark is not None and broker_id not in by_broker and rnd.random() < 0.3:
                continue  # a key without new rows may be left alone until a later call
            state = states.get(broker_id) or POLICY.new_state(config)
            states[broker_id], out = step(state, config, by_broker.get(broker_id, []), watermark)
            assert out.late == []
            for decided in out.tables[TABLE]:
                assert decided["broker_id"] == broker_id
                assert watermark is None or decided["ts_ms"] < watermark
            produced += out.tables[TABLE]
    assert all(not s.pending for s in states.values())
    assert_rows_equal(batch_rows(config, requests), produced, label=TABLE)


def test_a_request_at_the_watermark_is_not_final() -> None:
    # b's share depends on every topic of its millisecond: c arriving later at 1000 halves it
    first, later = TopicRequest(1000, 1, "b", 10), TopicRequest(1000, 1, "c", 10)
    state, out = step(POLICY.new_state(CONFIG), CONFIG, [row(first)], 1000)
    assert out.tables[TABLE] == []
    assert [p.ts_ms for p in state.pending] == [1000]
    state, out = step(state, CONFIG, [row(later, position=1)], 1001)
    assert [d["topic_threshold"] for d in out.tables[TABLE]] == [300, 300]  # (1000 - 400) // 2
    assert_rows_equal(batch_rows(CONFIG, [first, later]), out.tables[TABLE])
    assert state.pending == []


def test_empty_input() -> None:
    state, out = step(POLICY.new_state(CONFIG), CONFIG, [], 5000)
    assert out.tables == {TABLE: []} and out.late == []
    state, out = step(state, CONFIG, [], None)
    assert out.tables == {TABLE: []} and out.late == []
    assert POLICY.advance(CONFIG, POLICY.new_state(CONFIG), {}, None).tables == {TABLE: []}


def test_one_row() -> None:
    r = TopicRequest(7, 3, "x", 6000)
    state, out = step(POLICY.new_state(CONFIG), CONFIG, [row(r)], 8)
    assert out.tables[TABLE] == [{"ts_ms": 7, "broker_id": 3, "topic": "x", "bytes": 6000,
                                  "decision": "error", "reason": "message_too_large", "total_rate": 0.0,
                                  "topic_rate": 0.0, "total_threshold": 1000, "topic_threshold": 600,
                                  "threshold_source": "default"}]
    assert_rows_equal(batch_rows(CONFIG, [r]), out.tables[TABLE])
    assert step(state, CONFIG, [], None)[1].tables == {TABLE: []}


def test_watermark_none_decides_everything() -> None:
    # docs/topics.md's worked example: broker 1, 3000 bytes a second, b and a alternating
    requests = [TopicRequest(t * 1000, 1, "b" if t % 2 == 0 else "a", 6000 if t == 7 else 3000)
                for t in range(11)]
    state, out = step(POLICY.new_state(CONFIG), CONFIG, [row(r, 0, i) for i, r in enumerate(requests)], 0)
    assert out.tables[TABLE] == []
    state, out = step(state, CONFIG, [], None)
    by_ts = {d["ts_ms"]: d for d in out.tables[TABLE]}
    assert [by_ts[t]["decision"] for t in (4000, 5000, 6000, 7000, 9000, 10000)] == [
        "accepted", "accepted", "throttled", "error", "throttled", "throttled"]
    assert by_ts[10000]["total_rate"] == 2808.106595110376
    assert_rows_equal(batch_rows(CONFIG, requests), out.tables[TABLE])
    assert state.pending == []


def test_a_row_at_a_judged_millisecond_is_set_aside_as_late() -> None:
    state, out = step(POLICY.new_state(CONFIG), CONFIG, [row(TopicRequest(1000, 1, "b", 10))], 2000)
    assert len(out.tables[TABLE]) == 1
    late = row(TopicRequest(1000, 1, "c", 10), position=1)
    state, out = step(state, CONFIG, [late, row(TopicRequest(1001, 1, "c", 10), position=2)], None)
    assert out.late == [{"input": "topic_requests", "row": late,
                         "reason": "broker 1 already judged its requests at 1000 ms"}]
    assert [d["ts_ms"] for d in out.tables[TABLE]] == [1001]


def test_meters_pickle() -> None:
    meter = Meter(5)
    meter.mark(3000)
    meter.advance(20_005)
    copy = pickle.loads(pickle.dumps(meter))
    assert (copy.created_ms, copy.next_tick_ms, copy.rate, copy.initialized, copy.uncounted, copy.count) == (
        meter.created_ms, meter.next_tick_ms, meter.rate, meter.initialized, meter.uncounted, meter.count)


_KINDS = {"LongType": "long", "IntegerType": "int", "DoubleType": "double", "StringType": "string",
          "BooleanType": "boolean", "TimestampType": "timestamp_ms"}


@pytest.mark.spark
def test_declared_columns_are_the_batch_table_schema(spark) -> None:
    from quotaplane.topics.spark.evaluate import decisions, evaluate_requests
    from tests.topics.strategies import PARTITIONS, request_frame

    frame = request_frame(spark, [TopicRequest(0, 1, "a", 10), TopicRequest(5000, 1, "b", 6000)])
    schema = frame.transform(evaluate_requests(CONFIG, 5000, PARTITIONS)).transform(decisions).schema
    assert [(f.name, _KINDS[type(f.dataType).__name__]) for f in schema.fields] == [
        (c.name, c.kind) for c in DECISIONS_TABLE.columns]
    assert POLICY.tables == (DECISIONS_TABLE,) and POLICY.key == ("broker_id",)
