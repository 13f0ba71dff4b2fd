"""The stream's machinery with a minimal policy (`echo`): counting, quarantine, late rows, the
watermark, state carried between micro-batches, replays written once, the flush."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import ClassVar

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from quotaplane.core.fields import UNPARSABLE
from quotaplane.core.incremental import QUARANTINE, Advance, Column, Table
from quotaplane.core.policy import Input
from quotaplane.core.records import Field, RecordSchema
from quotaplane.core.spark.session import task_slots, tasks_for
from quotaplane.stream import keyed
from quotaplane.stream.commits import CommitLog
from quotaplane.stream.keyed import STATE, outcome_counts, outcome_value, partition_step, step_function
from quotaplane.stream.plan import Streamed
from quotaplane.stream.spark import microbatch
from quotaplane.stream.spark.answers import (
    DEFAULT_DRIVER_STEP_BELOW_ROWS,
    ROWS_PER_FILE,
    ROWS_PER_TASK,
    SPLIT_FROM,
    files_for,
    keys_tasks,
)
from quotaplane.stream.spark.microbatch import MicroBatches
from quotaplane.stream.spark.source import checked_lines
from tests.stream.echo import INPUT, TABLE, Echo
from tests.support.plans import plan_text

pytestmark = pytest.mark.spark

DELAY_MS = 2_000
ECHO = Streamed(Echo(), None, (INPUT,))


def _file(folder: Path, name: str, lines: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _event(ts: int, k: str, v: float = 1.0) -> str:
    return json.dumps({"ts": ts, "k": k, "v": v})


def _line(ts: int, k: str) -> str:
    """An event as the source hands it to a key's step: with its file and position."""
    return json.dumps({"ts": ts, "k": k, "v": 1.0, "_file": 1, "_position": ts})


def _batch(spark, path: Path, slots: int | None = None, streamed: Streamed = ECHO, item: Input = INPUT):
    files = spark.read.option("wholetext", "true").text(str(path)).select(
        F.input_file_name().alias("file"), "value")
    return checked_lines(files, streamed, item, slots)


@pytest.fixture(params=[0, DEFAULT_DRIVER_STEP_BELOW_ROWS], ids=["spark-step", "driver-step"])
def driver_step(request) -> int:
    """`MicroBatches`' `driver_step_below_rows`: the keys stepped by Spark's tasks (0), or, these
    batches being small, in the driver (`quotaplane.stream.spark.answers`)."""
    return request.param


@pytest.fixture
def setup(spark, tmp_path: Path, driver_step: int):
    log = CommitLog(tmp_path / "checkpoint")
    batches = MicroBatches([ECHO], tmp_path / "out", log, DELAY_MS, driver_step)
    return spark, tmp_path, log, batches


def _echo(spark, out: Path) -> list[tuple]:
    rows = spark.read.parquet(str(out / "echo")).collect()
    return sorted((r["k"], r["ts_ms"], r["seen"], r["batch"]) for r in rows)


def test_lines_spread_over_the_task_slots_give_the_same_checked_rows(spark, tmp_path) -> None:
    path = _file(tmp_path / "events", "a.jsonl", [_event(t, k) for t in range(0, 40_000, 1_000) for k in "ab"]
                 + ["not json", ""])
    read, spread = _batch(spark, path), _batch(spark, path, 2)
    assert "RoundRobinPartitioning(2)" in plan_text(spread)
    assert "RoundRobinPartitioning" not in plan_text(read)
    assert sorted(spread.collect()) == sorted(read.collect()) and len(read.collect()) == 81
    assert "RoundRobinPartitioning" not in plan_text(_batch(spark, path, 1))
    assert task_slots(spark) == spark.sparkContext.defaultParallelism and task_slots(object()) is None


def test_rows_are_decided_once_final_and_state_carries_between_batches(setup) -> None:
    spark, tmp, log, batches = setup
    landing = tmp / "landing" / "events"
    first = _file(landing, "a.jsonl", [_event(0, "a"), _event(1_000, "b"), "not json", _event(3_000, "a")])
    second = _file(landing, "b.jsonl", [_event(4_000, "a"), "", _event(2_000, "b")])
    batches.process(_batch(spark, first), 0)
    commit = log.latest()
    # watermark = 3000 - 2000: only the row at 0 is final
    assert (commit.number, commit.watermark_ms, commit.max_event_ms) == (1, 1_000, 3_000)
    assert commit.totals == {"read:events": 4, "used:events": 3, "quarantined:events": 1,
                             "late:events": 0, "table:echo": 1}
    assert _echo(spark, tmp / "out") == [("a", 0, 0, 1)]
    batches.process(_batch(spark, second), 1)  # the blank line is not a row
    assert log.latest().watermark_ms == 2_000
    assert _echo(spark, tmp / "out") == [("a", 0, 0, 1), ("b", 1_000, 0, 2)]
    assert batches.flush(spark) is not None
    final = log.latest()
    assert final.flushed and final.watermark_ms == 4_001
    assert _echo(spark, tmp / "out") == [("a", 0, 0, 1), ("a", 3_000, 1, 3), ("a", 4_000, 2, 3),
                                          ("b", 1_000, 0, 2), ("b", 2_000, 1, 3)]
    assert batches.flush(spark) is None  # nothing came since
    quarantined = spark.read.parquet(str(tmp / "out" / "quarantine" / "events")).collect()
    assert [(q["input"], q["row"]) for q in quarantined] == [("events", "not json")]
    assert quarantined[0]["reason"] == UNPARSABLE
    # a micro-batch's small tables are a file each, not one per shuffle partition
    written = [tmp / "out" / "echo" / "batch=3", log.state_dir("echo", 3),
               tmp / "out" / "quarantine" / "events" / "batch=1" / "source=reader"]
    assert [len(list(folder.glob("part-*.parquet"))) for folder in written] == [1, 1, 1]


def test_a_micro_batch_is_a_job_to_count_and_one_to_step_keep_state_and_write_a_table(setup) -> None:
    spark, tmp, log, batches = setup
    lines = [_event(0, "a"), _event(1_000, "b"), _event(5_000, "a")]
    path = _file(tmp / "landing" / "events", "a.jsonl", lines)
    batch = _batch(spark, path)
    context = spark.sparkContext
    group = f"one-micro-batch-{tmp.name}"  # a group of this test's own: the session keeps old jobs
    context.setJobGroup(group, "the jobs of one micro-batch")
    try:
        batches.process(batch, 0)
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
    # nothing quarantined or late: the counts are observed on the job that caches the batch, the
    # keys' outcomes on the job that steps them, in whose tasks they write their state and the
    # echo table (the policy's first; any other table is a job of its own); or, stepped in the
    # driver, the one job that collects their rows
    assert len(context.statusTracker().getJobIdsForGroup(group)) == 2
    assert log.latest().totals == {"read:events": 3, "used:events": 3, "quarantined:events": 0,
                                   "late:events": 0, "table:echo": 2}
    assert log.latest().keys == {"echo": 2}


def test_a_codec_pyarrow_cannot_write_leaves_a_small_batch_to_spark_s_step(spark, tmp_path: Path) -> None:
    log = CommitLog(tmp_path / "checkpoint")
    batches = MicroBatches([ECHO], tmp_path / "out", log, DELAY_MS, DEFAULT_DRIVER_STEP_BELOW_ROWS)
    path = _file(tmp_path / "landing" / "events", "a.jsonl", [_event(0, "a"), _event(5_000, "b")])
    spark.conf.set("spark.sql.parquet.compression.codec", "lz4")  # Hadoop's framing: Spark's writer only
    try:
        batches.process(_batch(spark, path), 0)
    finally:
        spark.conf.unset("spark.sql.parquet.compression.codec")
    written = [p.name for p in (tmp_path / "out" / "echo" / "batch=1").glob("part-*")]
    assert written and all(name.endswith(".lz4hadoop.parquet") for name in written)
    assert _echo(spark, tmp_path / "out") == [("a", 0, 0, 1)]


class _Judged(Echo):
    outcomes: ClassVar[dict[str, str]] = {"echo": "v", "absent": "k"}


@pytest.mark.parametrize("text", [pa.string(), pa.large_string()], ids=["string", "large_string"])
def test_a_key_steps_in_arrow_and_answers_in_the_types_spark_gave_it(text) -> None:
    # Spark passes strings as `large_string` when `spark.sql.execution.arrow.useLargeVarTypes` is on
    binary = pa.large_binary() if text == pa.large_string() else pa.binary()
    rows = [_line(ts, "a") for ts in (0, 3_000)]
    group = pa.table({"key": pa.array(['{"k":"a"}'] * 2, text), "input": pa.array(["events"] * 2, text),
                      "row": pa.array(rows, text), "state": pa.array([None, None], binary)})
    out = step_function(_Judged(), None, 1_000)(group)
    echo = pa.struct([("k", text), ("ts", pa.int64()), ("ts_ms", pa.int64()), ("v", pa.float64()),
                      ("seen", pa.int64())])
    assert [f.type for f in out.schema] == [text, text, text, binary, pa.int64(), echo]
    assert out.column("table").to_pylist() == ["echo", STATE]
    assert out.column("echo").to_pylist() == [{"k": "a", "ts": 0, "ts_ms": 0, "v": 1.0, "seen": 0}, None]
    assert out.column("row").to_pylist()[0] is None
    assert json.loads(out.column("row")[1].as_py()) == {"echo:v": {"1.0": 1}}
    assert out.column("through").to_pylist() == [None, 1_000]
    again = pa.table({"key": group.column("key")[:1], "input": pa.array([STATE], text),
                      "row": pa.array([None], text), "state": out.column("state")[1:]})
    after = step_function(_Judged(), None, None)(again)  # the flush: the pending row at 3000
    assert after.column("echo")[0].as_py()["seen"] == 1
    assert after.column("row")[1].as_py() == '{"echo:v":{"1.0":1}}'


def test_a_table_named_as_a_column_of_the_answer_is_refused() -> None:
    class Rows(Echo):
        tables = (Table("row", TABLE.columns),)

    with pytest.raises(ValueError, match="policy echo: table 'row' has the name of a column"):
        step_function(Rows(), None, 1_000)


@pytest.mark.parametrize(("answer_rows", "keys_per_answer"),
                         [(1, [1, 1, 1]), (3, [1, 2]), (keyed.ANSWER_ROWS, [3])])
def test_a_task_steps_each_key_of_its_sorted_rows_once_and_writes_their_states_in_one_file(
        tmp_path, monkeypatch, answer_rows, keys_per_answer) -> None:
    # a key's rows may span Arrow batches; each key is one group, stepped once; the answers of
    # consecutive keys are handed over together, whole keys at a time, in the keys' order
    monkeypatch.setattr(keyed, "ANSWER_ROWS", answer_rows)
    def rows(k: str, *times: int) -> pa.RecordBatch:
        lines = [_line(ts, k) for ts in times]
        return pa.record_batch({"key": [f'{{"k":"{k}"}}'] * len(times), "input": ["events"] * len(times),
                                "row": lines, "state": pa.array([None] * len(times), pa.binary())})

    batches = [rows("a", 0, 1), rows("a", 2), pa.concat_batches([rows("b", 0), rows("c", 0, 5_000)])]
    answers = list(partition_step(Echo(), None, 1_000, str(tmp_path))(iter(batches)))
    assert [len(set(b.column("key").to_pylist())) for b in answers] == keys_per_answer
    out = pa.Table.from_batches(answers)
    assert out.column_names == ["key", "table", "row", "through", "echo"]
    columns = (out.column(c).to_pylist() for c in ("key", "table", "echo"))
    decided = [(json.loads(k)["k"], r["seen"]) for k, t, r in zip(*columns, strict=True) if t == "echo"]
    assert decided == [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("c", 0)]
    assert [json.loads(k)["k"] for k, t in zip(out.column("key").to_pylist(), out.column("table").to_pylist(),
                                               strict=True) if t == STATE] == ["a", "b", "c"]
    assert [p.name for p in tmp_path.iterdir()] == ["part-00000.parquet"]  # no hidden file left
    states = pq.read_table(tmp_path / "part-00000.parquet")
    kept = {json.loads(k)["k"]: pickle.loads(v) for k, v in zip(*states.to_pydict().values(), strict=True)}
    pending_and_seen = {k: (len(v["pending"]), v["seen"]) for k, v in kept.items()}
    assert pending_and_seen == {"a": (0, 3), "b": (0, 1), "c": (1, 1)}


def test_outcomes_are_counted_per_value_a_string_as_is_any_other_value_as_json() -> None:
    assert [outcome_value(v) for v in (None, True, False, "reject", "", 3, 1.5)] == [
        "null", "true", "false", "reject", "", "3", "1.5"]
    rows = [{"v": None}, {"v": 1.5}, {}, {"v": 1.5}, {"v": "x"}]
    assert outcome_counts(_Judged(), {"echo": rows}) == {"echo:v": {"null": 2, "1.5": 2, "x": 1}}
    # equal values of other types are other values
    mixed = [{"v": True}, {"v": 1}, {"v": 1.0}, {"v": 1}]
    assert outcome_counts(_Judged(), {"echo": mixed}) == {"echo:v": {"true": 1, "1": 2, "1.0": 1}}
    assert outcome_counts(_Judged(), {"echo": []}) == {}
    assert outcome_counts(Echo(), {"echo": rows}) == {}


def test_a_table_is_written_in_a_file_per_rows_per_file_begun() -> None:
    rows = (0, 1, ROWS_PER_FILE, ROWS_PER_FILE + 1, 3 * ROWS_PER_FILE)
    assert [files_for(n) for n in rows] == [1, 1, 1, 2, 3]


def test_the_keys_are_stepped_in_one_task_then_in_one_per_task_slot() -> None:
    rows = (0, SPLIT_FROM, SPLIT_FROM + 1, 41_000, ROWS_PER_TASK * 2, ROWS_PER_TASK * 2 + 1)
    assert [keys_tasks(n, 8, 2) for n in rows] == [1, 1, 2, 2, 2, 4]
    assert [keys_tasks(n, 8, 4) for n in rows] == [1, 1, 4, 4, 4, 4]
    assert [keys_tasks(n, 3, 4) for n in rows] == [1, 1, 3, 3, 3, 3]  # at most the limit
    # the slots unknown: a task per SPLIT_FROM rows begun
    assert [keys_tasks(n, 8, None) for n in rows] == [1, 1, 2, 5, 8, 8]


def test_a_step_has_a_task_per_rows_per_task_begun_up_to_the_limit() -> None:
    rows = (0, 1, ROWS_PER_TASK, ROWS_PER_TASK + 1, 3 * ROWS_PER_TASK, 9 * ROWS_PER_TASK)
    assert [tasks_for(n, ROWS_PER_TASK, 8) for n in rows] == [1, 1, 1, 2, 3, 8]
    assert tasks_for(3 * ROWS_PER_TASK, ROWS_PER_TASK, 2) == 2
    # more than one task: a multiple of the task slots, so that no core waits for a last task alone
    assert [tasks_for(n, ROWS_PER_TASK, 8, 2) for n in rows] == [1, 1, 1, 2, 4, 8]
    assert tasks_for(5 * ROWS_PER_TASK, ROWS_PER_TASK, 8, 4) == 8
    assert tasks_for(2 * ROWS_PER_TASK, ROWS_PER_TASK, 8, 1) == 2
    # a floor of tasks (a batch step keeps every slot busy), still at most the limit
    assert [tasks_for(n, ROWS_PER_TASK, 8, 2, at_least=2) for n in rows] == [2, 2, 2, 2, 4, 8]
    assert tasks_for(0, ROWS_PER_TASK, 1, 2, at_least=2) == 1
    # no limit: as many as the rows need
    assert tasks_for(9 * ROWS_PER_TASK, ROWS_PER_TASK, None, 2) == 10


def test_rows_older_than_the_watermark_are_counted_and_kept_as_late(setup) -> None:
    spark, tmp, log, batches = setup
    landing = tmp / "landing" / "events"
    batches.process(_batch(spark, _file(landing, "a.jsonl", [_event(10_000, "a")])), 0)
    assert log.latest().watermark_ms == 8_000
    late = _file(landing, "b.jsonl", [_event(7_999, "a"), _event(8_000, "a")])
    batches.process(_batch(spark, late), 1)
    assert log.latest().totals["late:events"] == 1 and log.latest().totals["used:events"] == 2
    rows = spark.read.parquet(str(tmp / "out" / "late")).collect()
    assert len(rows) == 1 and rows[0]["source"] == "watermark" and rows[0]["input"] == "events"
    assert json.loads(rows[0]["row"])["ts"] == 7_999
    assert "7999" in rows[0]["reason"] and "8000" in rows[0]["reason"]
    batches.flush(spark)
    assert [r[1] for r in _echo(spark, tmp / "out")] == [8_000, 10_000]


class _Picky(Echo):
    """Echo, quarantining the rows with a negative `v` (a rule over rows, as the backlog's)."""

    def advance(self, config, state, rows, watermark_ms) -> Advance:
        events = rows.get("events", ())
        done = super().advance(config, state, {"events": [r for r in events if r["v"] >= 0]}, watermark_ms)
        bad = [{"input": "events", "reason": "v below 0", "row": json.dumps(r)} for r in events if r["v"] < 0]
        return Advance({**done.tables, QUARANTINE: bad}, done.late)


def test_rows_a_policy_quarantines_are_counted_for_their_input_and_kept(spark, tmp_path, driver_step) -> None:
    log = CommitLog(tmp_path / "checkpoint")
    batches = MicroBatches([Streamed(_Picky(), None, (INPUT,))], tmp_path / "out", log, DELAY_MS, driver_step)
    lines = [_event(0, "a"), _event(1_000, "b", -1.0), _event(2_000, "a", -2.0), _event(5_000, "a")]
    batches.process(_batch(spark, _file(tmp_path / "landing" / "events", "a.jsonl", lines)), 0)
    assert log.latest().totals == {"read:events": 4, "used:events": 2, "quarantined:events": 2,
                                   "late:events": 0, "table:echo": 1}
    kept = spark.read.parquet(str(tmp_path / "out" / "quarantine" / "events" / "batch=1" / "source=echo"))
    assert sorted((json.loads(r["row"])["ts"], r["reason"]) for r in kept.collect()) == [
        (1_000, "v below 0"), (2_000, "v below 0")]
    # the keys stepped again to write those rows (their result is not cached) left the same state:
    # the pending row at 5000 is decided once, after the one at 0
    assert batches.flush(spark) is not None
    assert _echo(spark, tmp_path / "out") == [("a", 0, 0, 1), ("a", 5_000, 1, 2)]


def test_a_batch_without_keys_leaves_an_empty_state_and_no_table_partition(setup) -> None:
    spark, tmp, log, batches = setup
    batches.process(_batch(spark, _file(tmp / "landing" / "events", "a.jsonl", ["not json"])), 0)
    assert log.latest().keys == {"echo": 0} and log.latest().decided == {"echo": 0}
    assert list(log.state_dir("echo", 1).iterdir()) == []
    assert not (tmp / "out" / "echo").exists()
    lines = [_event(0, "a"), _event(5_000, "a")]
    batches.process(_batch(spark, _file(tmp / "landing" / "events", "b.jsonl", lines)), 1)
    assert log.latest().keys == {"echo": 1}
    assert _echo(spark, tmp / "out") == [("a", 0, 0, 2)]


NOTES = Input("notes", RecordSchema("notes", (Field("ts", "time_ms"), Field("k", "string", required=False))),
              "notes for one key, or every key when they name none")


class _Noted(Echo):
    """Echo, and a `noted` table: per key, each note given to it (a note naming no key goes to
    every key, as a collection error naming no cluster goes to every cluster)."""

    time_fields: ClassVar[dict[str, str]] = {"events": "ts", "notes": "ts"}
    unkeyed = ("notes",)
    tables = (TABLE, Table("noted", (Column("k", "string"), Column("ts_ms", "long"))))

    def advance(self, config, state, rows, watermark_ms) -> Advance:
        done = super().advance(config, state, rows, watermark_ms)
        notes = [{"k": r["k"], "ts_ms": r["ts"]} for r in rows.get("notes", ())]
        return Advance({**done.tables, "noted": notes}, done.late)


def test_rows_naming_no_key_go_to_every_key_and_cost_nothing_when_there_are_none(spark, tmp_path, monkeypatch,
                                                                                driver_step) -> None:
    spread: list[str] = []  # the policies whose rows naming no key were spread, per call
    real = microbatch._spread_unkeyed
    monkeypatch.setattr(microbatch, "_spread_unkeyed", lambda keyed, policy: spread.append(policy.name)
                        or real(keyed, policy))
    log = CommitLog(tmp_path / "checkpoint")
    streamed = Streamed(_Noted(), None, (INPUT, NOTES))
    batches = MicroBatches([streamed], tmp_path / "out", log, DELAY_MS, driver_step)

    def batch(name: str, events: list[str], notes: list[str]):
        return (_batch(spark, _file(tmp_path / "landing" / "events", name, events), streamed=streamed)
                .unionByName(_batch(spark, _file(tmp_path / "landing" / "notes", name, notes),
                                    streamed=streamed, item=NOTES)))

    def noted() -> list[tuple[str, int]]:
        rows = spark.read.parquet(str(tmp_path / "out" / "noted")).collect()
        return sorted((r["k"], r["ts_ms"]) for r in rows)

    batches.process(batch("a.jsonl", [_event(0, "a"), _event(0, "b")],
                          [json.dumps({"ts": 0}), json.dumps({"ts": 0, "k": "b"})]), 0)
    assert noted() == [("a", 0), ("b", 0), ("b", 0)] and spread == ["echo"]
    # no note naming no key (counted with the batch's other counts): no aggregate and join to spread it
    batches.process(batch("b.jsonl", [_event(1_000, "a")], [json.dumps({"ts": 1_000, "k": "a"})]), 1)
    assert noted() == [("a", 0), ("a", 1_000), ("b", 0), ("b", 0)] and spread == ["echo"]
    assert batches.flush(spark) is not None and spread == ["echo"]
    assert log.latest().totals["used:notes"] == 3


def test_a_replayed_batch_writes_the_same_rows_once(setup) -> None:
    spark, tmp, log, batches = setup
    landing = tmp / "landing" / "events"
    first = _file(landing, "a.jsonl", [_event(t, "a") for t in range(0, 10_000, 1_000)])
    second = _file(landing, "b.jsonl", [_event(t, "a") for t in range(10_000, 20_000, 1_000)])
    batches.process(_batch(spark, first), 0)
    batches.process(_batch(spark, second), 1)
    once = _echo(spark, tmp / "out")
    batches.process(_batch(spark, second), 1)  # Spark runs batch 1 again after a crash
    assert _echo(spark, tmp / "out") == once
    assert log.latest().number == 2
    assert sorted(p.name for p in (log.root / "state" / "echo").iterdir()) == ["v=1", "v=2"]
    batches.flush(spark)
    rows = _echo(spark, tmp / "out")
    assert [r[1] for r in rows] == list(range(0, 20_000, 1_000))
    assert [r[2] for r in rows] == list(range(20))  # the state's counter, carried through the replay


def test_the_commit_log_continues_from_the_commit_before_a_batch(tmp_path: Path) -> None:
    from quotaplane.stream.commits import Commit

    log = CommitLog(tmp_path)
    assert log.before(0).number == 0 and log.latest().number == 0
    log.record(Commit(1, 0, None, None))
    log.record(Commit(2, 1, None, None))
    log.record(Commit(3, None, None, None, flushed=True))
    assert log.before(1).number == 1
    assert log.before(2).number == 3  # after the flush that followed batch 1
    log.record(Commit(2, 1, 5, 5))  # batch 1 replayed: the records after it go
    assert log.latest().number == 2 and log.latest().watermark_ms == 5


def test_a_checkpoint_of_another_version_is_refused(tmp_path: Path) -> None:
    from quotaplane.core.errors import ConfigError
    from quotaplane.stream.commits import Commit

    log = CommitLog(tmp_path)
    log.record(Commit(1, 0, None, None, version="0.0.1"))
    with pytest.raises(ConfigError, match=r"written by quotaplane 0\.0\.1"):
        log.check_version()


def test_the_commit_log_keeps_only_its_recent_records(tmp_path: Path) -> None:
    from quotaplane.stream.commits import KEEP, Commit

    log = CommitLog(tmp_path)
    for n in range(1, KEEP + 6):
        log.record(Commit(n, n - 1, None, None, totals={"read:x": n}))
    assert [c.number for c in log.records()] == list(range(6, KEEP + 6))
    assert log.before(KEEP + 4).number == KEEP + 4 and log.latest().totals == {"read:x": KEEP + 5}
