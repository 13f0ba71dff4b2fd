"""The storage policy in the streaming mode: fed in any chunks, it writes exactly the batch rows.

The driver is emulated here: rows split by cluster (an error naming no cluster given to every
cluster of the telemetry, rewritten, or to the null key), every key's state pickled between calls,
the watermark never above a row still to come, and a last call with the watermark None.
"""

from __future__ import annotations

import pickle
from collections import defaultdict
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from quotaplane.storage import names as N
from quotaplane.storage.config import StorageConfig, StorageRunConfig, parse_storage_config
from quotaplane.storage.incremental import DECISIONS, INPUT_NAMES, StorageIncremental, StorageKeyState
from tests.storage.engine.helpers import cluster_config, strimzi_config
from tests.storage.spark.scenarios import (
    REASONS,
    Telemetry,
    cluster_configs,
    local_configs,
    strimzi_configs,
    telemetry,
)
from tests.storage.spark.test_differential import reference_rows
from tests.support.differential import assert_rows_equal

POLICY = StorageIncremental()
TABLE = DECISIONS.name
NAMES = [c.name for c in DECISIONS.columns]
Key = tuple[Any, ...]


def batch_rows(config: StorageConfig, t: Telemetry) -> list[dict[str, Any]]:
    """What `quotaplane run` writes to `storage_decisions`: the reference rows (the mapping of the
    differential test) with the `ts` timestamp, here as epoch ms."""
    return [{**r, "ts": r["ts_ms"]} for r in reference_rows(config, t)]


def inputs(t: Telemetry) -> list[tuple[str, dict[str, Any]]]:
    """Every row as the readers give it: with `_file` and `_position`."""
    out = []
    for file, (name, rows) in enumerate(zip(INPUT_NAMES, (t.volumes, t.membership, t.errors), strict=True)):
        out += [(name, {**r, "_file": file, "_position": i}) for i, r in enumerate(rows)]
    return out


def split(t: Telemetry, rows: list[tuple[str, dict[str, Any]]]) -> list[tuple[Key, str, dict[str, Any]]]:
    """The driver's split by key (module docstring)."""
    named = (*t.volumes, *t.membership, *t.errors)
    clusters = sorted({r["cluster"] for r in named if r["cluster"] is not None})
    out: list[tuple[Key, str, dict[str, Any]]] = []
    for name, r in rows:
        if r["cluster"] is not None:
            out.append(((r["cluster"],), name, r))
        else:
            out += [((c,), name, {**r, "cluster": c}) for c in clusters or [None]]
    return out


def stream(config: StorageConfig, chunks: list[list[tuple[Key, str, dict[str, Any]]]],
           watermarks: list[int | None]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Feed the chunks as the driver does; the decided rows and the late ones. Checks on the way
    that rows have the table's columns in order and that `decided_through` holds its promise."""
    run = StorageRunConfig(config)
    states: dict[Key, bytes] = {}
    through: dict[Key, int | None] = {}
    decided: list[dict[str, Any]] = []
    late: list[dict[str, Any]] = []
    for chunk, watermark in zip(chunks, watermarks, strict=True):
        by_key: dict[Key, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
        for key, name, row in chunk:
            by_key[key][name].append(row)
        for key in sorted({*states, *by_key}, key=repr):
            state = pickle.loads(states[key]) if key in states else POLICY.new_state(run)
            result = POLICY.advance(run, state, by_key.get(key, {}), watermark)
            assert set(result.tables) == {TABLE}
            for row in result.tables[TABLE]:
                assert list(row) == NAMES
                assert through.get(key) is None or row["ts_ms"] >= through[key], "decided_through broken"
            decided += result.tables[TABLE]
            late += result.late
            bound = POLICY.decided_through(state, watermark)
            assert watermark is None or (bound is not None and bound <= watermark)
            through[key] = bound
            states[key] = pickle.dumps(state)
    for key, blob in states.items():
        state = pickle.loads(blob)
        assert not state.pending, f"{key}: rounds left undecided after the end"
        assert POLICY.decided_through(state, None) is None
    return decided, late


@st.composite
def with_unnamed_errors(draw: st.DrawFn, config: StorageConfig) -> Telemetry:
    """A few small clusters, and sometimes collection errors naming no cluster (unmarked: a poll's
    rows land together, which an error spread over clusters polled at other times would not)."""
    t = draw(telemetry(config, draw(st.integers(0, 3))))
    times = [r["ts"] for r in (*t.volumes, *t.membership, *t.errors)] or [0]
    for _ in range(draw(st.integers(0, 2))):
        ts = draw(st.sampled_from(times)) + draw(st.sampled_from([0, 1, 30_000, 60_000]))
        reason = draw(st.sampled_from(REASONS))
        t.errors.append({"ts": ts, "reason": reason, "cluster": None, "poll_id": None})
    return t


@st.composite
def chunked(draw: st.DrawFn, rows: list[tuple[Key, str, dict[str, Any]]]
            ) -> tuple[list[list[tuple[Key, str, dict[str, Any]]]], list[int | None]]:
    """Rows in chunks (mostly in time order, some held back to later chunks, each chunk shuffled)
    and a non-decreasing watermark after each, never above a row of a later chunk."""
    ordered = sorted(rows, key=lambda r: r[2]["ts"])
    n = draw(st.integers(1, 6))
    cuts = sorted(draw(st.lists(st.integers(0, n - 1), min_size=len(ordered), max_size=len(ordered))))
    chunk_of = [min(n - 1, c + draw(st.sampled_from([0, 0, 0, 1, 2]))) for c in cuts]
    chunks: list[list[tuple[Key, str, dict[str, Any]]]] = [[] for _ in range(n)]
    for row, c in zip(ordered, chunk_of, strict=True):
        chunks[c].append(row)
    chunks = [draw(st.permutations(c)) for c in chunks]
    watermarks: list[int | None] = []
    low = min((r[2]["ts"] for r in rows), default=0) - 1
    for k in range(n):
        later = [r[2]["ts"] for c in chunks[k + 1:] for r in c]
        high = min(later) if later else max([low, *(r[2]["ts"] for r in rows)]) + 200_000
        # mostly as far as it may go (rounds decided along the way), sometimes held back
        w = draw(st.sampled_from([high, high, high, low]) | st.integers(low, high))
        watermarks.append(w)
        low = w
    return [*chunks, []], [*watermarks, None]


CONFIGS = {"cluster": cluster_configs(), "local": local_configs(), "strimzi": strimzi_configs()}


@pytest.mark.parametrize("kind", CONFIGS)
@given(data=st.data())
def test_any_chunking_gives_the_batch_rows(kind: str, data: st.DataObject) -> None:
    config = data.draw(CONFIGS[kind])
    t = data.draw(with_unnamed_errors(config))
    chunks, watermarks = data.draw(chunked(split(t, inputs(t))))
    decided, late = stream(config, chunks, watermarks)
    assert late == []
    assert_rows_equal(batch_rows(config, t), decided, NAMES, label=TABLE)


# -- boundaries -----------------------------------------------------------------------------------

CLUSTER = cluster_config(("availableBytesBelow", "300"), ("availableBytesBelow", "100"), fallback="0.5",
                         produce="1000")
RUN = StorageRunConfig(CLUSTER)  # check interval 0: every distinct unmarked ts is a round
WINDOWED = StorageRunConfig(parse_storage_config({N.VOLUME_SOURCE: "cluster", N.CHECK_INTERVAL: "60000",
                                                  N.per_volume_limit("availableBytesBelow", "hard"): "100"}))


def _vol(ts: int, poll_id: int | None = None, available: int = 50, broker: int = 1) -> dict[str, Any]:
    return {"ts": ts, "cluster": "a", "broker_id": broker, "log_dir": "/d", "total_bytes": 1000,
            "available_bytes": available, "poll_id": poll_id, "_file": 1, "_position": ts}


def _advance(run: StorageRunConfig, state: StorageKeyState, watermark: int | None,
             **rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    result = POLICY.advance(run, state, rows, watermark)
    assert result.late == []
    return result.tables[TABLE]


def test_the_policy_declares_what_it_streams() -> None:
    assert POLICY.name == "storage"
    assert POLICY.key == ("cluster",)
    assert dict(POLICY.time_fields) == {"volumes": "ts", "membership": "ts", "collection_errors": "ts"}
    assert POLICY.broadcast is None


def test_empty_input() -> None:
    state = POLICY.new_state(RUN)
    assert _advance(RUN, state, 1_000) == []
    assert POLICY.decided_through(state, 1_000) == 1_000
    assert _advance(RUN, state, None) == []
    assert POLICY.decided_through(state, None) is None


def test_one_row_decided_at_the_end_as_the_batch() -> None:
    state = POLICY.new_state(RUN)
    row = _vol(5)
    out = _advance(RUN, state, None, volumes=[row])
    assert_rows_equal(batch_rows(CLUSTER, Telemetry(volumes=[row])), out, NAMES)
    assert out[0]["ts"] == out[0]["ts_ms"] == 5 and out[0]["throttle_factor"] == 0.0


def test_a_round_at_the_watermark_is_not_final() -> None:
    # poll round: final once every row's ts is below W
    state = POLICY.new_state(RUN)
    assert _advance(RUN, state, 1_000, volumes=[_vol(1_000, poll_id=7)]) == []
    assert POLICY.decided_through(state, 1_000) == 1_000
    assert [r["poll_id"] for r in _advance(RUN, state, 1_001)] == [7]
    # window round, interval 0: the window is the one ts
    state = POLICY.new_state(RUN)
    assert _advance(RUN, state, 5, volumes=[_vol(5)]) == []
    assert [r["round_window"] for r in _advance(RUN, state, 6)] == [5]
    # window round, interval 60 s: final when W reaches the window's end, not its rows' ts
    state = POLICY.new_state(WINDOWED)
    assert _advance(WINDOWED, state, 30_000, volumes=[_vol(30_000)]) == []
    assert _advance(WINDOWED, state, 59_999, volumes=[_vol(59_000, available=20)]) == []
    assert POLICY.decided_through(state, 59_999) == 59_000
    out = _advance(WINDOWED, state, 60_000)
    assert [(r["round_window"], r["ts_ms"]) for r in out] == [(0, 59_000)]


def test_watermark_none_decides_everything() -> None:
    state = POLICY.new_state(WINDOWED)
    rows = [_vol(1_000), _vol(2_000, poll_id=1), _vol(70_000)]
    assert _advance(WINDOWED, state, 1_000, volumes=rows) == []
    out = _advance(WINDOWED, state, None)
    assert_rows_equal(batch_rows(WINDOWED.main, Telemetry(volumes=rows)), out, NAMES)
    assert not state.pending and POLICY.decided_through(state, None) is None


def test_a_final_round_waits_behind_an_earlier_undecided_one() -> None:
    # strimzi, check interval 60 s: the order matters (the breach seen by window 0 stays cached)
    config = strimzi_config(limit=("bytes", "100"), interval="60")
    run = StorageRunConfig(config)
    state = POLICY.new_state(run)
    # window 0 (time 1 000, open until 60 000) comes before poll 3 (time 2 000, final at 2 001)
    rows = [_vol(1_000, available=50), _vol(2_000, poll_id=3, available=500, broker=2)]
    assert _advance(run, state, 2_001, volumes=rows) == []
    assert POLICY.decided_through(state, 2_001) == 1_000
    out = _advance(run, state, 60_000)
    assert [(r["round_window"], r["poll_id"], r["throttle_factor"]) for r in out] == \
        [(0, None, 0.0), (None, 3, 0.0)]
    assert POLICY.decided_through(state, 60_000) == 60_000
    assert_rows_equal(batch_rows(config, Telemetry(volumes=rows)), out, NAMES)


def test_a_row_for_a_decided_poll_is_late_not_redecided() -> None:
    state = POLICY.new_state(RUN)
    assert len(_advance(RUN, state, 2_000, volumes=[_vol(1_000, poll_id=4)])) == 1
    late_row = _vol(2_500, poll_id=4, broker=2)
    result = POLICY.advance(RUN, state, {"volumes": [late_row, _vol(2_600, poll_id=5)]}, None)
    assert [r["poll_id"] for r in result.tables[TABLE]] == [5]
    assert len(result.late) == 1
    assert result.late[0]["input"] == "volumes" and result.late[0]["row"] is late_row
    assert "poll round 4 was decided already" in result.late[0]["reason"]


def test_decided_poll_ids_stay_a_few_ranges() -> None:
    state = POLICY.new_state(RUN)
    for poll in [3, 1, 2, 10, 5, 4]:
        _advance(RUN, state, None, volumes=[_vol(1_000 + poll, poll_id=poll)])
    assert state.decided_polls == [(1, 5), (10, 10)]


def test_the_state_pickles_without_the_configuration() -> None:
    secret = "sasl-password-1234"
    config = parse_storage_config({N.DIALECT_PROP: "strimzi", N.STRIMZI_BOOTSTRAP: "k:9092",
                                   N.MIN_AVAILABLE_BYTES: "100",
                                   N.STRIMZI_ADMIN_PREFIX + "sasl.jaas.config": secret})
    run = StorageRunConfig(config)
    state = POLICY.new_state(run)
    rows = [_vol(0, available=50), _vol(60_000, available=500)]
    first = _advance(run, state, 30_000, volumes=rows[:1])
    blob = pickle.dumps(state)
    assert secret.encode() not in blob
    second = _advance(run, pickle.loads(blob), None, volumes=rows[1:])
    assert_rows_equal(batch_rows(config, Telemetry(volumes=rows)), first + second, NAMES)


# -- the table's schema ---------------------------------------------------------------------------

SPARK_TYPES = {"long": "bigint", "int": "int", "double": "double", "string": "string", "boolean": "boolean",
               "timestamp_ms": "timestamp"}


@pytest.mark.spark
def test_the_declared_columns_are_the_batch_table_schema(spark) -> None:
    from quotaplane.storage.records import COLLECTION_ERRORS, MEMBERSHIP, VOLUMES
    from quotaplane.storage.spark.decisions import DECISION_COLUMNS, storage_decisions
    from tests.support.differential import records_frame

    frames = [records_frame(spark, rows, schema) for rows, schema in
              (([_vol(5)], VOLUMES), ([], MEMBERSHIP), ([], COLLECTION_ERRORS))]
    df = storage_decisions(CLUSTER, *frames)
    assert NAMES == DECISION_COLUMNS
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == \
        [(c.name, SPARK_TYPES[c.kind]) for c in DECISIONS.columns]
