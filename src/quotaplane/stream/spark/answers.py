"""The answers of a micro-batch's keys, stepped by Spark's tasks or, for a small batch, in the driver.

The keys' rows (`key`, `input`, `row`, `state`: the states of the previous commit and the batch's
rows) are stepped by `keyed.partition_step`, which writes the keys' new states to the checkpoint and
answers with a row per decided row, per row set aside (late, or quarantined by the policy) and per
key (its state row, with its outcome counts and `through`). Two ways to run it, the same answers,
states and counts:

- `SparkAnswers`: the rows repartitioned by key into `keys_tasks` tasks, sorted by key within each;
  one job steps the keys (each task writes its keys' states), counts the answers (observed) and
  writes the first table. Any other table is a job of its own, over the answers cached.
- `DriverAnswers`: the rows collected to the driver as Arrow (one job), sorted by key and stepped
  there by the same function, the decided tables written with pyarrow in the Parquet types Spark
  gives them. A micro-batch of some hundreds of rows spends most of its Spark step on fixed costs:
  planning a shuffle and a write, a shuffle's map job, a Python task and the write's commit (0.27 s
  of 0.44 s for 800 produce requests; docs/performance.md, "Small micro-batches stepped in the
  driver"). It is taken when the step's rows (the keys of the state and the batch's used rows) are
  fewer than `spark.quotaplane.stream.driverStepBelowRows` (default 10,000, where the Spark step
  goes from one task to one per core; 0: never).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from quotaplane.core.incremental import Table
from quotaplane.core.spark.session import tasks_for
from quotaplane.core.spark.settings import rows_setting
from quotaplane.core.spark.tables import write_parquet
from quotaplane.stream.keyed import STATE

# the keys' Spark step (`keys_tasks`): one task up to SPLIT_FROM rows, then one per task slot, and
# more only past ROWS_PER_TASK rows a task
SPLIT_FROM = 10_000
ROWS_PER_TASK = 1_000_000
DRIVER_STEP = "spark.quotaplane.stream.driverStepBelowRows"
#: the driver steps what Spark's step would give one task
DEFAULT_DRIVER_STEP_BELOW_ROWS = SPLIT_FROM
ROWS_PER_FILE = 50_000  # a table of a micro-batch is written in a file per this many rows begun

_KIND_TYPES: dict[str, T.DataType] = {
    "long": T.LongType(), "int": T.IntegerType(), "double": T.DoubleType(), "string": T.StringType(),
    "boolean": T.BooleanType(), "timestamp_ms": T.LongType(),
}
OUT_FIELDS = [
    T.StructField("key", T.StringType()), T.StructField("table", T.StringType()),
    T.StructField("row", T.StringType()), T.StructField("through", T.LongType()),
]

Step = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def driver_step_below_rows(spark: Any) -> int:
    """`spark.quotaplane.stream.driverStepBelowRows` of the session (default 10,000)."""
    return rows_setting(spark, DRIVER_STEP, DEFAULT_DRIVER_STEP_BELOW_ROWS,
                        "0 steps every micro-batch's keys in Spark's tasks")


def table_schema(table: Table) -> T.StructType:
    return T.StructType([T.StructField(c.name, _KIND_TYPES[c.kind], True) for c in table.columns])


def out_schema(tables: Sequence[Table]) -> T.StructType:
    """The keys' answers (`quotaplane.stream.keyed`): a row's table, its JSON, the state's
    `through`, and a decided row of each table in the column named after it."""
    return T.StructType([*OUT_FIELDS, *(T.StructField(t.name, table_schema(t)) for t in tables)])


def table_columns(table: Table, parsed: Column) -> list[Column]:
    return [(F.timestamp_millis(parsed[c.name]) if c.kind == "timestamp_ms" else parsed[c.name]).alias(c.name)
            for c in table.columns]


def keys_tasks(rows: int, limit: int, slots: int | None) -> int:
    """The tasks that step a micro-batch's keys, `rows` rows with their state rows, at most `limit`
    (the shuffle partitions: adaptive execution does not coalesce the shuffle of a cached plan).
    One up to `SPLIT_FROM` rows; then one per task slot, and more (a multiple of the slots) only
    past `ROWS_PER_TASK` rows a task: a Python task costs 50-75 ms of its own, so a micro-batch of
    41,000 requests stepped in six tasks on two cores took a fifth longer than in two
    (docs/performance.md, "The keys in a task per core"). Without the slots (Spark Connect), one
    task per `SPLIT_FROM` rows begun."""
    if slots is None:
        return tasks_for(rows, SPLIT_FROM, limit)
    return tasks_for(rows, ROWS_PER_TASK, limit, slots, at_least=slots if rows > SPLIT_FROM else 1)


def files_for(rows: int) -> int:
    """The files (write tasks) for a table of `rows` rows: one per `ROWS_PER_FILE` begun. A
    micro-batch's tables are small, and a write task per shuffle partition cost a task, a file
    and its commit each."""
    return max(1, -(-rows // ROWS_PER_FILE))


def observe_all(df: DataFrame, counters: Sequence[Column],
                action: Callable[[DataFrame], None] | None = None) -> dict[str, Any]:
    """The values of the aggregate `counters` over `df`, observed (`DataFrame.observe`) while
    `action` runs over it (default: a `noop` write, which only computes `df`, caching it when it is
    persisted). An action's own stages count them: no job, shuffle or stage of their own. Every
    action here observes in its result stage, whose task's metrics Spark merges once per
    partition however often it retries it."""
    observation = Observation()
    observed = df.observe(observation, *counters)
    if action is None:
        observed.write.format("noop").mode("overwrite").save()
    else:
        action(observed)
    return dict(observation.get)


@dataclass(frozen=True)
class Counted:
    """What the keys answered: rows per `table` value, the least `through` (None: no key gave
    one), and the outcome counts (JSON) of each key that decided rows."""

    rows: dict[str, int]
    through: int | None
    outcomes: list[str]


class SparkAnswers:
    """The keys stepped by Spark's tasks (module docstring); `cache` when the answers are read by
    a job after the one that steps them."""

    def __init__(self, keyed: DataFrame, step: Step, tables: Sequence[Table], tasks: int,
                 cache: bool) -> None:
        self.tables, self.cached = tables, cache
        by_key = keyed.repartition(tasks, "key").sortWithinPartitions("key")
        answers = by_key.mapInArrow(step, out_schema(tables))
        self.answers = answers.persist(StorageLevel.MEMORY_AND_DISK) if cache else answers

    def count(self, names: Sequence[str], first: Path | None) -> Counted:
        """Step the keys, count their answers per `names`, and write the first table to `first`."""
        kind = F.col("table")
        counters = [F.count(F.when(kind == name, 1)).alias(f"n_{i}") for i, name in enumerate(names)]
        counters += [F.min("through").alias("through"),
                     F.collect_list(F.when(kind == STATE, F.col("row"))).alias("outcomes")]
        counted = observe_all(self.answers, counters, None if first is None else lambda df: write_parquet(
            # in the keys' own tasks, so not coalesced: that would step the keys in fewer tasks
            _typed(df, self.tables[0]), first))
        through = counted["through"]
        return Counted({name: int(counted[f"n_{i}"]) for i, name in enumerate(names)},
                       None if through is None else int(through), list(counted["outcomes"]))

    def write(self, table: Table, staged: Path, rows: int) -> None:
        write_parquet(_typed(self.answers, table).coalesce(files_for(rows)), staged)

    def rows(self, table: Table) -> list[dict[str, Any]]:
        return [r.asDict() for r in _parsed(self.answers, table).select("_r.*").collect()]

    def frame(self) -> DataFrame:
        return self.answers

    def close(self) -> None:
        if self.cached:
            self.answers.unpersist()


class DriverAnswers:
    """The keys stepped in the driver (module docstring)."""

    def __init__(self, spark: SparkSession, keyed: DataFrame, step: Step, tables: Sequence[Table],
                 options: dict[str, Any]) -> None:
        self.spark, self.tables, self.options = spark, tables, options
        rows = keyed.toArrow().sort_by("key")
        answers = list(step(iter(rows.to_batches())))
        self.answers = (pa.Table.from_batches(answers) if answers
                        else to_arrow_schema(out_schema(tables)).empty_table())
        self.kinds = self.answers.column("table")

    def count(self, names: Sequence[str], first: Path | None) -> Counted:
        """Count the answers per `names`, and write the first table to `first`."""
        counts = Counter(self.kinds.to_pylist())
        states = self.answers.filter(pc.equal(self.kinds, STATE)).column("row").drop_null()
        through = pc.min(self.answers.column("through")).as_py()
        counted = Counted({name: counts.get(name, 0) for name in names}, through, states.to_pylist())
        if first is not None and counted.rows[self.tables[0].name]:
            self.write(self.tables[0], first, counted.rows[self.tables[0].name])
        return counted

    def write(self, table: Table, staged: Path, rows: int) -> None:
        """`table`'s rows as Spark writes them: its columns in their types (a `timestamp_ms` as
        Spark's timestamp), in one file written with the session's options (`arrow_parquet_options`)."""
        struct = self._chosen(table).combine_chunks()
        columns = [struct.field(c.name).cast(pa.timestamp("ms", tz="UTC")) if c.kind == "timestamp_ms"
                   else struct.field(c.name) for c in table.columns]
        staged.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table(columns, names=[c.name for c in table.columns]),
                       staged / "part-00000.parquet", **self.options)

    def rows(self, table: Table) -> list[dict[str, Any]]:
        return self._chosen(table).to_pylist()

    @cached_property
    def _frame(self) -> DataFrame:
        return self.spark.createDataFrame(self.answers, out_schema(self.tables))

    def frame(self) -> DataFrame:
        """The answers as a Spark frame, made once: for the rows set aside (late, quarantined by the
        policy), rare, written as the Spark step's."""
        return self._frame

    def close(self) -> None:
        pass

    def _chosen(self, table: Table) -> pa.ChunkedArray:
        return self.answers.filter(pc.equal(self.kinds, table.name)).column(table.name)


def _parsed(result: DataFrame, table: Table) -> DataFrame:
    """`table`'s rows of the keys' `result`: `_r.*` are its columns."""
    return result.where(F.col("table") == table.name).select(F.col(table.name).alias("_r"))


def _typed(result: DataFrame, table: Table) -> DataFrame:
    """`table`'s rows of the keys' `result` in its columns and types."""
    return _parsed(result, table).select(*table_columns(table, F.col("_r")))
