"""The backlog policy evaluated incrementally equals the batch run, however the input is chunked."""

from __future__ import annotations

import pickle
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from quotaplane.backlog.config import BacklogPolicies
from quotaplane.backlog.engine.evaluate import evaluate
from quotaplane.backlog.engine.model import Snapshot
from quotaplane.backlog.engine.reader import group_reasons
from quotaplane.backlog.engine.tables import check_row, eviction_rows
from quotaplane.backlog.incremental import (
    CHECKS,
    EVICTIONS,
    INPUT,
    LATE_REASON,
    QUARANTINE,
    BacklogIncremental,
)
from quotaplane.backlog.records import BACKLOG_SNAPSHOTS, DUPLICATE_REASON, PARENT_CONFLICT_REASON
from tests.backlog.builders import policies, snap
from tests.backlog.strategies import fleet
from tests.support.differential import assert_rows_equal

INC = BacklogIncremental()
COLUMNS = {t.name: [c.name for c in t.columns] for t in INC.tables}
Chunks = list[tuple[list[dict[str, Any]], int | None]]
Rows = list[dict[str, Any]]


def as_row(s: Snapshot, file: int = 0, position: int = 0) -> dict[str, Any]:
    return {**asdict(s), "_file": file, "_position": position}


def feed(config: BacklogPolicies, chunks: Chunks) -> tuple[dict[str, Rows], Rows]:
    """What the streaming driver does: split each chunk by topic, advance every key seen so far with
    the chunk's watermark, pickle the states between calls; concatenate what comes back."""
    states: dict[tuple[str, ...], bytes] = {}
    out: dict[str, list[dict[str, Any]]] = {CHECKS: [], EVICTIONS: [], QUARANTINE: []}
    late: list[dict[str, Any]] = []
    for rows, watermark in chunks:
        by_key: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
        for r in rows:
            by_key[tuple(r[k] for k in INC.key)].append(r)
        for key in sorted(set(states) | set(by_key)):
            state = pickle.loads(states[key]) if key in states else INC.new_state(config)
            advance = INC.advance(config, state, {INPUT: by_key.get(key, [])}, watermark)
            if watermark is not None:  # bounded: only the ticks not final yet are kept
                assert all(ts >= watermark for ts in state.pending)
            else:
                assert not state.pending
            states[key] = pickle.dumps(state)
            assert set(advance.tables) <= {*COLUMNS, QUARANTINE}
            for name, table in advance.tables.items():
                if name in COLUMNS:
                    assert all(list(r) == COLUMNS[name] for r in table), name
                out[name].extend(table)
            late.extend(advance.late)
    return out, late


def batch(config: BacklogPolicies, rows: Sequence[dict[str, Any]]) -> tuple[dict[str, Rows], Rows]:
    """The batch run: the group rules per (tick, topic), then the reference engine on the rows kept."""
    groups: dict[tuple[int, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[(r["ts_ms"], r["topic"])].append(r)
    used, quarantined = [], []
    for group in groups.values():
        snapshots = [Snapshot.from_record(r) for r in group]
        for r, s, reason in zip(group, snapshots, group_reasons(snapshots), strict=True):
            if reason is None:
                used.append(s)
            else:
                quarantined.append({"input": INPUT, "reason": reason, "row": r})
    results = evaluate(config, used)
    return ({CHECKS: [check_row(r) for r in results],
             EVICTIONS: [e for r in results for e in eviction_rows(r)]}, quarantined)


@st.composite
def with_group_faults(draw: Any, generated: tuple[BacklogPolicies, list[Snapshot]]) -> list[Snapshot]:
    """Some rows seen twice, some with another partitioned topic: what the group rules set aside."""
    rows = list(generated[1])
    for s in draw(st.lists(st.sampled_from(generated[1]), max_size=2)):
        rows.append(replace(s, backlog_size_bytes=s.backlog_size_bytes + 1))
    for i in draw(st.lists(st.integers(0, len(rows) - 1), max_size=2)):
        namespace = rows[i].topic.rsplit("/", 1)[0]
        rows[i] = replace(rows[i], partitioned_topic=f"{namespace}/other")
    return rows


@st.composite
def chunked(draw: Any, rows: list[Snapshot]) -> Chunks:
    """The rows with file/position, in random chunks (each shuffled) with non-decreasing watermarks
    never above a later chunk's rows, then the end of the input."""
    dicts = [as_row(s, draw(st.integers(0, 2)), i) for i, s in enumerate(rows)]
    n = draw(st.integers(1, 5))
    parts: list[list[dict[str, Any]]] = [[] for _ in range(n)]
    for r in dicts:
        parts[draw(st.integers(0, n - 1))].append(r)
    chunks: Chunks = []
    watermark = min((r["ts_ms"] for r in dicts), default=0) - 1
    for i, part in enumerate(parts):
        later = [r["ts_ms"] for p in parts[i + 1:] for r in p]
        top = min(later) if later else max((r["ts_ms"] for r in dicts), default=0) + 2
        watermark = draw(st.integers(watermark, max(watermark, top)))
        chunks.append((draw(st.permutations(part)), watermark))
    chunks.append(([], None))
    return chunks


@given(st.data())
def test_any_chunking_gives_the_batch_rows(data: st.DataObject) -> None:
    config, rows = data.draw(fleet(scenarios=2))
    rows = data.draw(with_group_faults((config, rows)))
    chunks = data.draw(chunked(rows))
    expected, quarantined = batch(config, [r for c, _ in chunks for r in c])
    out, late = feed(config, chunks)
    assert late == []
    for name, columns in COLUMNS.items():
        assert_rows_equal(expected[name], out[name], columns, label=name)
    key = lambda q: (q["reason"], q["row"]["_position"])  # noqa: E731
    assert sorted(out[QUARANTINE], key=key) == sorted(quarantined, key=key)


CONFIG = policies({"backlogQuotaDefaultLimitBytes": 1000,
                   "backlogQuotaDefaultRetentionPolicy": "consumer_backlog_eviction"})


def test_a_row_at_the_watermark_is_not_final() -> None:
    state = INC.new_state(CONFIG)
    first = INC.advance(CONFIG, state, {INPUT: [as_row(snap(ts=100_000, size=5000))]}, 100_000)
    assert first.tables[CHECKS] == [] and first.late == [] and list(state.pending) == [100_000]
    second = INC.advance(CONFIG, state, {INPUT: [as_row(snap(ts=100_000, sub="t", size=10), position=1)]},
                         100_001)
    checks = second.tables[CHECKS]
    assert [(r["ts_ms"], r["oldest_subscription"], r["size_evictions_total"]) for r in checks] == \
        [(100_000, "s", 1)]
    assert [r["subscription"] for r in second.tables[EVICTIONS]] == ["s"]
    assert state.pending == {}


def test_empty_input() -> None:
    state = INC.new_state(CONFIG)
    for watermark in (5, None):
        advance = INC.advance(CONFIG, state, {}, watermark)
        assert not any(advance.tables.values()) and advance.late == []


def test_one_row_decided_when_the_input_ends() -> None:
    state = INC.new_state(CONFIG)
    row = as_row(snap(ts=100_000, size=5000))
    assert INC.advance(CONFIG, state, {INPUT: [row]}, None).tables[CHECKS] == \
        [check_row(evaluate(CONFIG, [Snapshot.from_record(row)])[0])]
    assert pickle.loads(pickle.dumps(state)) == state and state.pending == {}


def test_watermark_none_decides_every_tick_in_time_order() -> None:
    state = INC.new_state(CONFIG)
    rows = [as_row(snap(ts=ts, size=5000), position=i) for i, ts in enumerate((300_000, 100_000, 200_000))]
    assert INC.advance(CONFIG, state, {INPUT: rows}, 50_000).tables[CHECKS] == []
    checks = INC.advance(CONFIG, state, {}, None).tables[CHECKS]
    assert [(r["ts_ms"], r["size_evictions_total"]) for r in checks] == \
        [(100_000, 1), (200_000, 2), (300_000, 3)]


def test_a_row_of_a_decided_tick_is_late() -> None:
    state = INC.new_state(CONFIG)
    INC.advance(CONFIG, state, {INPUT: [as_row(snap(ts=100_000))]}, 150_000)
    row = as_row(snap(ts=100_000, sub="t"), position=1)
    advance = INC.advance(CONFIG, state, {INPUT: [row]}, 150_000)
    assert advance.late == [{"input": INPUT, "reason": LATE_REASON, "row": row}]
    assert advance.tables[CHECKS] == [] and state.pending == {}


def test_group_rules_quarantine_when_the_tick_is_final() -> None:
    parent = "persistent://t/ns/p"
    rows = [as_row(snap(ts=100_000, sub="x"), position=0), as_row(snap(ts=100_000, sub="x"), position=1),
            as_row(snap(ts=100_000, sub="y"), position=2),
            as_row(snap(ts=200_000, sub="y"), position=3),
            as_row(snap(ts=200_000, sub="z", parent=parent), position=4)]
    state = INC.new_state(CONFIG)
    advance = INC.advance(CONFIG, state, {INPUT: rows}, 200_000)
    assert [r["oldest_subscription"] for r in advance.tables[CHECKS]] == ["y"]
    assert [(q["reason"], q["row"]["_position"]) for q in advance.tables[QUARANTINE]] == \
        [(DUPLICATE_REASON, 0), (DUPLICATE_REASON, 1)]
    end = INC.advance(CONFIG, state, {}, None)
    assert end.tables[CHECKS] == []
    assert [(q["reason"], q["row"]["_position"]) for q in end.tables[QUARANTINE]] == \
        [(PARENT_CONFLICT_REASON, 3), (PARENT_CONFLICT_REASON, 4)]


SPARK_KINDS = {"long": "bigint", "int": "int", "double": "double", "string": "string", "boolean": "boolean",
               "timestamp_ms": "timestamp"}


@pytest.mark.spark
def test_declared_tables_are_the_batch_stage_tables(spark) -> None:
    from quotaplane.backlog.spark.evaluate import decided_rows, evaluation
    from quotaplane.core.spark.session import slot_partitions
    from tests.support.differential import records_frame

    frame = records_frame(spark, [as_row(snap(size=5000))], BACKLOG_SNAPSHOTS)
    result = evaluation(decided_rows(frame, CONFIG, slot_partitions(spark)))
    written = {CHECKS: result.checks, EVICTIONS: result.evictions}
    for table in INC.tables:
        schema = written[table.name].schema
        assert [(f.name, f.dataType.simpleString()) for f in schema.fields] == \
            [(c.name, SPARK_KINDS[c.kind]) for c in table.columns], table.name


@pytest.mark.spark
def test_group_rules_quarantine_the_rows_the_spark_reader_does(spark) -> None:
    from pyspark.sql import functions as F

    from quotaplane.backlog.spark.reader import with_group_rules
    from quotaplane.core.spark.readers import REASON
    from tests.support.differential import records_frame

    parent, other = "persistent://t/ns/p", "persistent://t/ns/q"
    cases = [("x", None), ("x", None), ("y", None),  # a duplicate: the other subscription is used
             ("x", None), ("x", parent), ("y", None),  # duplicates disagreeing: every row set aside
             ("y", None), ("z", parent),  # a conflict
             ("y", parent), ("z", parent), ("w", other), ("w", other)]
    ticks = [100_000] * 3 + [200_000] * 3 + [300_000] * 2 + [400_000] * 4
    rows = [as_row(snap(ts=ts, sub=sub, parent=p), position=i)
            for i, (ts, (sub, p)) in enumerate(zip(ticks, cases, strict=True))]
    frame = records_frame(spark, rows, BACKLOG_SNAPSHOTS).withColumn(REASON, F.lit(None).cast("string"))
    spark_rows = [(r["ts_ms"], r["subscription"], r["partitioned_topic"], r[REASON])
                  for r in with_group_rules(frame).where(F.col(REASON).isNotNull()).collect()]
    advance = INC.advance(CONFIG, INC.new_state(CONFIG), {INPUT: rows}, None)
    ours = [(q["row"]["ts_ms"], q["row"]["subscription"], q["row"]["partitioned_topic"], q["reason"])
            for q in advance.tables[QUARANTINE]]
    assert sorted(ours, key=repr) == sorted(spark_rows, key=repr)
    assert [r["ts_ms"] for r in advance.tables[CHECKS]] == [100_000]
