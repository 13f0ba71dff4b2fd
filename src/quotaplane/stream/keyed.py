"""The keys' step of a micro-batch, run by Spark on the executors: `partition_step` is the
`mapInArrow` function of a task, whose rows are sorted by key; it steps each key's rows as one
group (`step_function`) and writes the task's new key states to one file of the checkpoint.

A group holds the key's state row (`input` = `STATE`, the pickled state in `state`; absent for a
key not seen before) and its new rows (`input` = the input's name, the row as JSON in `row`). The
policy's `Incremental.advance` decides what is final; the group returns one row per decided table
row (`table`, and the row in the column named after the table: a struct of the table's columns,
`_out_type`), per row the policy quarantined (`table` = `QUARANTINE`, the row as JSON in `row`),
per late row (`table` = `LATE_TABLE`, the same) and the key's new state (`table` = `STATE`, with
`through`: `decided_through`, and in `row` the key's decided rows counted by the value of each
table's outcome column, `outcome_counts`, or null when it decided none).

The decided rows go to Spark as Arrow columns of their table's types, with no text between (an
int in a double column becomes that double). JSON carries the rest exactly: Python's `json` writes
the shortest repr of a double and any integer, and Spark's `from_json` reads them back to the same
double and long.
"""

from __future__ import annotations

import json
import os
import pickle
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from quotaplane.core.incremental import Incremental, Table

STATE = "_state"
LATE_TABLE = "_late"
#: the columns of a group's answer besides the tables' own
ANSWER_COLUMNS = ("key", "table", "row", "state", "through")

#: the Arrow type of each column kind but `string` (`timestamp_ms`: epoch ms, a timestamp once in Spark)
_ARROW_KINDS = {"long": pa.int64(), "int": pa.int32(), "double": pa.float64(), "boolean": pa.bool_(),
                "timestamp_ms": pa.int64()}


def _out_type(table: Table, text: pa.DataType) -> pa.StructType:
    """The Arrow struct of a row of `table`: its columns, in order, of their kinds' types (a string
    of `text`)."""
    return pa.struct([pa.field(c.name, _ARROW_KINDS.get(c.kind, text)) for c in table.columns])


def _table_rows(table: Table, rows: Sequence[Mapping[str, Any]], kind: pa.StructType) -> pa.StructArray:
    """`rows` (dicts, with at least `table`'s columns) as a struct array of `kind`, column by column."""
    fields = list(kind)
    columns = [pa.array([row.get(c.name) for row in rows], f.type)
               for c, f in zip(table.columns, fields, strict=True)]
    return pa.StructArray.from_arrays(columns, fields=fields)


# one encoder for every row: `json.dumps` with options builds a new one per call
_dumps: Callable[[Any], str] = json.JSONEncoder(separators=(",", ":"), allow_nan=True, default=str).encode


def _loads_all(texts: Sequence[str]) -> list[dict[str, Any]]:
    """Rows given as JSON objects, decoded in one call."""
    return json.loads(f"[{','.join(texts)}]")


def outcome_value(value: Any) -> str:
    """An outcome column's value as the stream counts it (the metrics' label): a string as is,
    null as `"null"`, any other value as its JSON (`true`, `3`)."""
    if value is None:
        return "null"
    return value if isinstance(value, str) else _dumps(value)


def outcome_counts(policy: Incremental[Any], tables: Mapping[str, Sequence[Mapping[str, Any]]],
                   ) -> dict[str, dict[str, int]]:
    """Per `<table>:<column>` of `policy.outcomes` that has decided rows, the rows per value."""
    counts: dict[str, dict[str, int]] = {}
    for table, column in policy.outcomes.items():
        rows = tables.get(table, ())
        if not rows:
            continue
        # counted by type and value first (True and 1 are equal keys), each value labelled once
        raw = Counter((type(v), v) for v in (row.get(column) for row in rows))
        values = counts.setdefault(f"{table}:{column}", {})
        for (_, value), n in raw.items():
            label = outcome_value(value)
            values[label] = values.get(label, 0) + n
    return counts


@dataclass
class _KeyAnswer:
    """One key's answer: its rows (`table`, and `row`'s text or None), the last its state row, with
    the decided rows of each table (in the tables' order, the first rows), the pickled state and
    `through`."""

    key: str
    table: list[str]
    row: list[str | None]
    decided: list[list[dict[str, Any]]]
    state: bytes
    through: int | None


class _Answers:
    """The answers of keys stepped one after another, as one Arrow table: each column is built
    once for them all, not once per key (a key with a few rows would pay more for its columns than
    for its step). A key's rows are its decided rows, table by table, the rows the policy
    quarantined, its late rows, then its state row."""

    def __init__(self, tables: Sequence[Table], out_types: Sequence[pa.StructType],
                 schema: pa.Schema) -> None:
        self.tables, self.out_types, self.schema = tables, out_types, schema
        self.key: list[str] = []
        self.table: list[str] = []
        self.row: list[str | None] = []
        self.through: list[int | None] = []
        self.decided: list[list[dict[str, Any]]] = [[] for _ in tables]
        self.at: list[list[int]] = [[] for _ in tables]  # the answer row of each decided row

    def add(self, answer: _KeyAnswer) -> None:
        start = len(self.table)
        for rows, decided, at in zip(answer.decided, self.decided, self.at, strict=True):
            at.extend(range(start, start + len(rows)))
            decided.extend(rows)
            start += len(rows)
        self.key += [answer.key] * len(answer.table)
        self.table += answer.table
        self.row += answer.row
        self.through += [None] * (len(answer.table) - 1) + [answer.through]  # on the state row

    def __len__(self) -> int:
        return len(self.table)

    def arrow(self) -> pa.Table:
        text = self.schema.field("row").type  # Spark's string type here (large or not)
        n = len(self.table)
        columns = {"key": pa.array(self.key, self.schema.field("key").type),
                   "table": pa.array(self.table, text), "row": pa.array(self.row, text)}
        columns["through"] = pa.array(self.through, pa.int64())
        for table, kind, rows, at in zip(self.tables, self.out_types, self.decided, self.at, strict=True):
            index = np.full(n, -1, np.int64)
            index[at] = np.arange(len(at))
            columns[table.name] = _table_rows(table, rows, kind).take(pa.array(index, mask=index < 0))
        return pa.table(columns)


class _KeyStep:
    """Advancing one key's group of `policy` to `watermark_ms` (`step_function`)."""

    def __init__(self, policy: Incremental[Any], config: Any, watermark_ms: int | None) -> None:
        self.policy, self.config, self.watermark_ms = policy, config, watermark_ms
        self.tables = policy.output_tables(config)
        self.names = {t.name for t in self.tables}
        if clash := sorted(self.names.intersection(ANSWER_COLUMNS)):
            raise ValueError(f"policy {policy.name}: table {clash[0]!r} has the name of a column of the "
                             f"keys' answer (one of {', '.join(ANSWER_COLUMNS)})")
        self._out_types: dict[pa.DataType, list[pa.StructType]] = {}  # per string type

    def answers(self, schema: pa.Schema) -> _Answers:
        """An empty set of answers to groups of `schema`."""
        text = schema.field("row").type
        if text not in self._out_types:
            self._out_types[text] = [_out_type(t, text) for t in self.tables]
        return _Answers(self.tables, self._out_types[text], schema)

    def __call__(self, group: pa.Table) -> _KeyAnswer:
        policy = self.policy
        key = group.column("key")[0].as_py()
        state: Any = None
        texts: dict[str, list[str]] = defaultdict(list)
        for kind, text, blob in zip(group.column("input").to_pylist(), group.column("row").to_pylist(),
                                    group.column("state").to_pylist(), strict=True):
            if kind == STATE:
                state = pickle.loads(blob)
            else:
                texts[kind].append(text)
        rows = {kind: _loads_all(given) for kind, given in texts.items()}
        if policy.unkeyed and any(rows.get(name) for name in policy.unkeyed):
            fields = json.loads(key)
            if any(v is not None for v in fields.values()):
                for name in policy.unkeyed:
                    for row in rows.get(name, ()):
                        if all(row.get(k) is None for k in fields):
                            row.update(fields)
        if state is None:
            state = policy.new_state(self.config)
        advanced = policy.advance(self.config, state, rows, self.watermark_ms)
        decided = [advanced.tables.get(t.name) or [] for t in self.tables]
        out_table = [t.name for t, table_rows in zip(self.tables, decided, strict=True) for _ in table_rows]
        out_row: list[str | None] = [None] * len(out_table)
        for name, table_rows in advanced.tables.items():
            if name not in self.names:  # rows the policy quarantined
                out_table += [name] * len(table_rows)
                out_row += [_dumps(row) for row in table_rows]
        for late in advanced.late:
            out_table.append(LATE_TABLE)
            out_row.append(_dumps(late))
        counts = outcome_counts(policy, advanced.tables)
        out_table.append(STATE)
        out_row.append(_dumps(counts) if counts else None)
        blob = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
        through = policy.decided_through(state, self.watermark_ms)
        return _KeyAnswer(key, out_table, out_row, decided, blob, through)


def step_function(policy: Incremental[Any], config: Any, watermark_ms: int | None,
                  ) -> Callable[[pa.Table], pa.Table]:
    """The function advancing one key's group of `policy` to `watermark_ms`. A group is read and
    returned as Arrow columns, without a pandas frame each way; the answer holds the key's pickled
    state on its state row (`partition_step` writes the states to the checkpoint instead)."""
    key_step = _KeyStep(policy, config, watermark_ms)

    def step(group: pa.Table) -> pa.Table:
        answer = key_step(group)
        answers = key_step.answers(group.schema)
        answers.add(answer)
        table = answers.arrow()
        state = [None] * (table.num_rows - 1) + [answer.state]  # on the state row
        return table.add_column(3, "state", pa.array(state, group.schema.field("state").type))

    return step


#: the answer rows a task gathers before it hands them over as one Arrow table
ANSWER_ROWS = 8_192


def partition_step(policy: Incremental[Any], config: Any, watermark_ms: int | None, state_dir: str,
                   ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The `mapInArrow` function advancing the keys of one task's partition, its rows sorted by key
    (so each key's rows are one run): each key is stepped as `step_function` steps it, and the
    answers of consecutive keys are given back together (about `ANSWER_ROWS` rows at a time),
    without the keys' pickled states. The task writes its keys' states (`key`, `state`) to one
    Parquet file of `state_dir`, named by its partition (a retried task replaces it), under a hidden
    name of the attempt's own, renamed into place when whole. The state row (`table` = `STATE`)
    stays, with the key's outcome counts and `through`."""
    key_step = _KeyStep(policy, config, watermark_ms)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        keys: list[str] = []
        states: list[bytes] = []
        answers: _Answers | None = None
        for group in _key_runs(batches):
            answer = key_step(group)
            keys.append(answer.key)
            states.append(answer.state)
            if answers is None:
                answers = key_step.answers(group.schema)
            answers.add(answer)
            if len(answers) >= ANSWER_ROWS:
                yield from answers.arrow().to_batches()
                answers = None
        if answers is not None:
            yield from answers.arrow().to_batches()
        if keys:
            _write_states(state_dir, pa.table({"key": pa.array(keys, pa.string()),
                                               "state": pa.array(states, pa.binary())}))

    return run


def _key_runs(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.Table]:
    """The rows of `batches` (sorted by `key`) as one table per key."""
    pending: list[pa.RecordBatch] = []
    current: Any = None
    for batch in batches:
        if batch.num_rows == 0:
            continue
        keys = batch.column("key").to_pylist()
        start = 0
        for i in range(1, len(keys) + 1):
            if i == len(keys) or keys[i] != keys[start]:
                if keys[start] != current and pending:
                    yield pa.Table.from_batches(pending)
                    pending = []
                current = keys[start]
                pending.append(batch.slice(start, i - start))
                start = i
    if pending:
        yield pa.Table.from_batches(pending)


def _write_states(state_dir: str, table: pa.Table) -> None:
    from pyspark import TaskContext

    context = TaskContext.get()
    part, attempt = (context.partitionId(), context.attemptNumber()) if context is not None else (0, 0)
    os.makedirs(state_dir, exist_ok=True)
    final = os.path.join(state_dir, f"part-{part:05d}.parquet")
    # an attempt's own hidden name: two attempts of a task (a retry, a speculative copy) never
    # write one file together, and the last to finish replaces the other's whole file
    hidden = os.path.join(state_dir, f".part-{part:05d}-{attempt}.parquet.tmp")
    pq.write_table(table, hidden)
    os.replace(hidden, final)
