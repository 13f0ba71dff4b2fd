"""One micro-batch of `quotaplane stream`: new landing files in, decision partitions out.

The batch's files (one row per file: its input, path and text) are split into lines, parsed and
checked exactly as `quotaplane run` reads JSON Lines (`quotaplane.core.spark.readers`): rows that
break a rule go to `quarantine/<input>/batch=<n>` with the reason, used rows whose event time is
below the previous commit's watermark go to `late/<input>/batch=<n>` (never silently dropped), and
the rest go to their policy, split by its key: the key's state (from the previous commit) and its
new rows are one group, stepped in a task of `mapInArrow` over rows partitioned and sorted by key
(`quotaplane.stream.keyed`), or in the driver when they are few (`quotaplane.stream.spark.answers`).
The decided rows are written to the policy's tables under `batch=<n>` (the first table by the job
that steps the keys), the new state to the checkpoint (by the stepping tasks, a file each), then
the commit is recorded (`quotaplane.stream.commits`). Per input and batch
`read = used + quarantined + late`, where `used` counts the rows handed to a policy.

The watermark is the latest event time seen (over every input) minus `--watermark-delay`, never
lower than the previous one; the final flush of `--until-idle` decides everything (no watermark)
and leaves the watermark just past the latest event time.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from quotaplane.core.incremental import QUARANTINE, Incremental, Table
from quotaplane.core.spark.session import shuffle_partitions, task_slots
from quotaplane.core.spark.tables import write_parquet
from quotaplane.core.spark.task_writes import arrow_parquet_options
from quotaplane.stream.commits import Commit, CommitLog, publish, staging_dir
from quotaplane.stream.keyed import LATE_TABLE, STATE, partition_step
from quotaplane.stream.plan import Streamed
from quotaplane.stream.spark.answers import (
    DEFAULT_DRIVER_STEP_BELOW_ROWS,
    DriverAnswers,
    SparkAnswers,
    files_for,
    keys_tasks,
    observe_all,
)

STATE_SCHEMA = T.StructType([T.StructField("key", T.StringType()), T.StructField("state", T.BinaryType())])
LATE_SCHEMA = T.StructType([T.StructField("input", T.StringType()), T.StructField("reason", T.StringType()),
                            T.StructField("row", T.StringType())])


@dataclass
class BatchReport:
    """What one commit did, for the progress display and the metrics."""

    commit: Commit
    seconds: float
    #: per input: read, used, quarantined, late
    inputs: dict[str, dict[str, int]] = field(default_factory=dict)
    #: rows written per table
    tables: dict[str, int] = field(default_factory=dict)
    #: keys in each policy's state
    keys: dict[str, int] = field(default_factory=dict)
    #: per `<table>:<column>` (`Incremental.outcomes`), the rows decided by value
    outcomes: dict[str, dict[str, int]] = field(default_factory=dict)
    #: rows of this commit of the tables other policies are given (`Incremental.broadcast`)
    shared: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: per such table, the time before which all its rows have been written (`decided_through`)
    through: dict[str, int | None] = field(default_factory=dict)
    #: per policy with `Incremental.unkeyed` inputs, this batch's used rows of them naming no key
    unkeyed: dict[str, int] = field(default_factory=dict)

    @property
    def rows_read(self) -> int:
        return sum(i["read"] for i in self.inputs.values())


class MicroBatches:
    """Processes the stream's micro-batches (see the module docstring)."""

    def __init__(self, streamed: Sequence[Streamed], out_dir: Path, log: CommitLog, delay_ms: int,
                 driver_step_below_rows: int = DEFAULT_DRIVER_STEP_BELOW_ROWS) -> None:
        self.streamed = list(streamed)
        self.out_dir = out_dir
        self.log = log
        self.delay_ms = delay_ms
        #: a policy's keys are stepped in the driver below this many rows (`answers.DriverAnswers`)
        self.driver_step_below_rows = driver_step_below_rows
        self.input_of = {i.name: (s, i) for s in self.streamed for i in s.inputs}
        self.shared = {s.policy.broadcast for s in self.streamed if s.policy.broadcast}

    # -- the steps ---------------------------------------------------------------------------------

    def process(self, batch: DataFrame, spark_batch: int) -> None:
        """`foreachBatch`: one micro-batch of checked lines (`quotaplane.stream.spark.source`)."""
        self._commit(batch.sparkSession, batch, spark_batch)

    def flush(self, spark: SparkSession) -> BatchReport | None:
        """Decide everything still pending (the input has ended); None when nothing came since the
        last flush."""
        latest = self.log.latest()
        if latest.number == 0 or latest.flushed:
            return None
        return self._commit(spark, None, None)

    def _commit(self, spark: SparkSession, batch: DataFrame | None, spark_batch: int | None) -> BatchReport:
        started = time.perf_counter()
        prev = self.log.before(spark_batch) if spark_batch is not None else self.log.latest()
        number = prev.number + 1
        report = BatchReport(Commit(number, spark_batch, prev.watermark_ms, prev.max_event_ms,
                                    totals=dict(prev.totals)), 0.0)
        checked = batch.persist(StorageLevel.MEMORY_AND_DISK) if batch is not None else None
        try:
            if checked is not None:
                self._split(checked, prev, report)
            commit = report.commit
            if batch is None:  # the flush: decide everything; later rows must be newer than all seen
                watermark = None
                commit.flushed = True
                commit.watermark_ms = None if commit.max_event_ms is None else commit.max_event_ms + 1
            else:
                watermark = commit.watermark_ms
            keep_from: int | None = None
            for streamed in self.streamed:
                shared = streamed.policy.broadcast
                broadcast = None
                policy_watermark = watermark
                if shared is not None:
                    # the rows decided so far that may still be needed, and this commit's; decide
                    # only as far as they are complete
                    broadcast = [*prev.in_force, *report.shared.get(shared, [])]
                    through = report.through.get(shared, watermark)
                    if watermark is not None and through is not None:
                        policy_watermark = min(watermark, through)
                    keep_from = policy_watermark
                rows = (self._policy_rows(checked, streamed, prev.watermark_ms)
                        if checked is not None else None)
                self._advance(spark, streamed, rows, broadcast, prev.number, number, policy_watermark,
                              report, prev.keys.get(streamed.policy.name, 0))
            commit.in_force = _in_force([*prev.in_force, *report.shared.get(STORAGE_DECISIONS, [])],
                                        keep_from)
        finally:
            if checked is not None:
                checked.unpersist()
        for name, count in report.tables.items():
            commit.totals[f"table:{name}"] = commit.totals.get(f"table:{name}", 0) + count
        for name, values in report.outcomes.items():
            for value, count in values.items():
                key = f"outcome:{name}:{value}"
                commit.totals[key] = commit.totals.get(key, 0) + count
        for name, counts in report.inputs.items():
            for what, count in counts.items():
                commit.totals[f"{what}:{name}"] = commit.totals.get(f"{what}:{name}", 0) + count
        commit.rows = report.rows_read
        commit.decided = dict(report.tables)
        commit.keys = dict(report.keys)
        report.seconds = commit.seconds = round(time.perf_counter() - started, 3)
        self.log.record(commit)
        for streamed in self.streamed:
            self.log.prune_state(streamed.policy.name, prev.number)
        return report

    def _split(self, checked: DataFrame, prev: Commit, report: BatchReport) -> None:
        """Count the batch per input, write its quarantined and late rows, move the watermark. The
        counts are observed while the checked rows are cached: one stage, no shuffle."""
        late = self._late(prev.watermark_ms)
        ok = F.col("reason").isNull()
        names = list(self.input_of)
        counters: list[Column] = [F.max(F.when(ok & ~late, F.col("event_ms"))).alias("max_event")]
        for i, name in enumerate(names):
            mine = F.col("input") == name
            counters += [F.count(F.when(mine, 1)).alias(f"read_{i}"),
                         F.count(F.when(mine & ~ok, 1)).alias(f"quarantined_{i}"),
                         F.count(F.when(mine & ok & late, 1)).alias(f"late_{i}")]
        spread = [s.policy for s in self.streamed if s.policy.unkeyed]
        counters += [F.count(F.when(ok & ~late & _unkeyed(policy), 1)).alias(f"unkeyed_{policy.name}")
                     for policy in spread]
        counted = observe_all(checked, counters)
        report.unkeyed = {policy.name: int(counted[f"unkeyed_{policy.name}"]) for policy in spread}
        for i, name in enumerate(names):
            read, quarantined = int(counted[f"read_{i}"]), int(counted[f"quarantined_{i}"])
            n_late = int(counted[f"late_{i}"])
            report.inputs[name] = {"read": read, "used": read - quarantined - n_late,
                                   "quarantined": quarantined, "late": n_late}
        latest = report.commit.max_event_ms
        if counted["max_event"] is not None:
            latest = int(counted["max_event"]) if latest is None else max(latest, int(counted["max_event"]))
        number = report.commit.number
        quarantined = sum(c["quarantined"] for c in report.inputs.values())
        if quarantined:
            self._write_quarantine(
                checked.where(F.col("reason").isNotNull()).select(
                    "input", F.col("input").alias("record"), "reason", F.col("original").alias("row")),
                number, "reader", quarantined)
        n_late = sum(c["late"] for c in report.inputs.values())
        if n_late:
            reason = F.concat(F.lit("event time "), F.col("event_ms").cast("string"),
                              F.lit(" is before the watermark "), F.lit(str(prev.watermark_ms)))
            self._write(checked.where(F.col("reason").isNull() & late)
                        .select("input", reason.alias("reason"), "row"), "late", number, n_late,
                        "source=watermark")
        commit = report.commit
        commit.max_event_ms = latest
        if latest is not None:
            candidate = latest - self.delay_ms
            before = prev.watermark_ms
            commit.watermark_ms = candidate if before is None else max(before, candidate)

    @staticmethod
    def _late(watermark_ms: int | None) -> Column:
        if watermark_ms is None:
            return F.lit(False)
        return F.col("event_ms") < F.lit(watermark_ms)

    def _policy_rows(self, checked: DataFrame, streamed: Streamed, before: int | None) -> DataFrame:
        """The used, on-time rows of the policy's inputs (`key`, `input`, `row`, no state)."""
        late = self._late(before)
        names = [i.name for i in streamed.inputs]
        return checked.where(F.col("input").isin(names) & F.col("reason").isNull() & ~late).select(
            "key", "input", "row", F.lit(None).cast("binary").alias("state"))

    def _advance(self, spark: SparkSession, streamed: Streamed, rows: DataFrame | None,
                 broadcast: list[dict[str, Any]] | None, prev_number: int, number: int,
                 watermark: int | None, report: BatchReport, prev_keys: int) -> None:
        """Advance every key of one policy (`prev_keys` in its state before this commit); for the
        tables other policies are given, note how far their rows are complete (`decided_through`,
        the least over the keys)."""
        policy = streamed.policy
        previous_state = self.log.state_dir(policy.name, prev_number)
        parts: list[DataFrame] = []
        if previous_state.exists():
            parts.append(spark.read.schema(STATE_SCHEMA).parquet(str(previous_state)).select(
                "key", F.lit(STATE).alias("input"), F.lit(None).cast("string").alias("row"), "state"))
        if rows is not None:
            parts.append(rows)
        if not parts:
            return
        keyed = parts[0]
        for part in parts[1:]:
            keyed = keyed.unionByName(part)
        if report.unkeyed.get(policy.name):  # an aggregate and a join: only when there are such rows
            keyed = _spread_unkeyed(keyed, policy)
        if broadcast:
            keys = keyed.select("key").distinct()
            shared = spark.createDataFrame([(r,) for r in map(_json_row, broadcast)], "row string")
            keyed = keyed.unionByName(keys.crossJoin(shared).select(
                "key", F.lit(policy.broadcast).alias("input"), "row",
                F.lit(None).cast("binary").alias("state")))
        target = self.log.state_dir(policy.name, number)
        staged = staging_dir(target)
        shutil.rmtree(staged, ignore_errors=True)  # a replayed commit's partial state
        staged.mkdir(parents=True)
        step = partition_step(policy, streamed.config, watermark, str(staged))
        rows_in = prev_keys + sum(report.inputs.get(i.name, {}).get("used", 0) for i in streamed.inputs)
        tables = policy.output_tables(streamed.config)
        answers: SparkAnswers | DriverAnswers
        options = arrow_parquet_options(spark) if rows_in < self.driver_step_below_rows else None
        if options is not None:  # the driver writes the tables with pyarrow, as Spark's writer would
            answers = DriverAnswers(spark, keyed, step, tables, options)
        else:
            tasks = keys_tasks(rows_in, shuffle_partitions(spark), task_slots(spark))
            answers = SparkAnswers(keyed, step, tables, tasks, _read_again(tables, self.shared))
        names = list(dict.fromkeys([STATE, *(t.name for t in tables), LATE_TABLE, QUARANTINE]))
        first = self._partition(tables[0].name, number) if tables else None
        try:
            # the keys are stepped (each writing its state), their answers counted (rows per table,
            # their outcome counts: `keyed.outcome_counts`, the least `through`) and the first table
            # written: in one job of Spark's, or in the driver
            counted = answers.count(names, None if first is None else staging_dir(first))
            count_of = counted.rows
            for text in counted.outcomes:
                for name, values in json.loads(text).items():
                    total = report.outcomes.setdefault(name, {})
                    for value, n in values.items():
                        total[value] = total.get(value, 0) + n
            report.keys[policy.name] = count_of[STATE]
            for i, table in enumerate(tables):
                count = count_of[table.name]
                report.tables[table.name] = count
                if i == 0:
                    assert first is not None
                    if count:
                        publish(staging_dir(first), first)
                    else:  # no partition for a table without rows (nor a table folder before any)
                        shutil.rmtree(staging_dir(first), ignore_errors=True)
                        if first.parent.is_dir() and not any(first.parent.iterdir()):
                            first.parent.rmdir()
                elif count:
                    part = self._partition(table.name, number)
                    answers.write(table, staging_dir(part), count)
                    publish(staging_dir(part), part)
                if count and table.name in self.shared:
                    report.shared[table.name] = [_plain(row) for row in answers.rows(table)]
            if count_of[LATE_TABLE]:
                late = answers.frame().where(F.col("table") == LATE_TABLE).select(
                    F.from_json("row", LATE_SCHEMA).alias("_l")).select("_l.*")
                total = count_of[LATE_TABLE]
                self._write(late, "late", number, total, f"source={policy.name}")
                report.commit.totals[f"policy_late:{policy.name}"] = report.commit.totals.get(
                    f"policy_late:{policy.name}", 0) + total
            if count_of[QUARANTINE]:
                self._policy_quarantine(answers.frame(), streamed, number, report, count_of[QUARANTINE])
            publish(staged, target)
        finally:
            answers.close()
        through = None if watermark is None else (
            counted.through if counted.through is not None else watermark)
        for table in tables:
            if table.name in self.shared:
                report.through[table.name] = through

    def _policy_quarantine(self, result: DataFrame, streamed: Streamed, number: int, report: BatchReport,
                           total: int) -> None:
        """The `total` rows the policy quarantined: written beside the reader's, counted (observed
        on their write) as quarantined, not used, for their input."""
        rows = (result.where(F.col("table") == QUARANTINE)
                .select(F.from_json("row", LATE_SCHEMA).alias("_q")).select("_q.*")
                .select("input", F.col("input").alias("record"), "reason", "row"))
        names = [i.name for i in streamed.inputs]
        counters = [F.count(F.when(F.col("input") == n, 1)).alias(f"n_{i}") for i, n in enumerate(names)]
        counted = observe_all(rows, counters, lambda df: self._write_quarantine(
            df, number, streamed.policy.name, total))
        for i, name in enumerate(names):
            entry = report.inputs.setdefault(name, {"read": 0, "used": 0, "quarantined": 0, "late": 0})
            entry["used"] -= int(counted[f"n_{i}"])
            entry["quarantined"] += int(counted[f"n_{i}"])

    # -- writing ---------------------------------------------------------------------------------

    def _partition(self, table: str, number: int, sub: str | None = None) -> Path:
        """`<table>/batch=<number>[/<sub>]` of the output."""
        target = self.out_dir / table / f"batch={number}"
        return target if sub is None else target / sub

    def _write(self, df: DataFrame, table: str, number: int, rows: int, sub: str | None = None) -> None:
        """Write `<table>/batch=<number>[/<sub>]` (`rows` rows) whole or not at all
        (`commits.publish`), in `files_for(rows)` files at most."""
        target = self._partition(table, number, sub)
        staged = staging_dir(target)
        write_parquet(df.coalesce(files_for(rows)), staged)
        publish(staged, target)

    def _write_quarantine(self, df: DataFrame, number: int, source: str, rows: int) -> None:
        """`quarantine/<input>/batch=<number>/source=<source>` (`rows` rows in all): one folder per
        input, as the batch run's `quarantine/<record>`; `source` is `reader` (a row's own rules) or
        the policy that quarantined rows by rules over several rows."""
        staged = self.out_dir / "quarantine" / f"_writing-batch={number}-{source}"
        write_parquet(df.coalesce(files_for(rows)), staged, partition_by=["record"])
        for folder in sorted(staged.glob("record=*")):
            name = folder.name[len("record="):]
            publish(folder, self.out_dir / "quarantine" / name / f"batch={number}" / f"source={source}")
        shutil.rmtree(staged, ignore_errors=True)


def _read_again(tables: Sequence[Table], shared: set[str]) -> bool:
    """Whether the keys' result is cached for the jobs after the one that steps them: when they
    write a second table or collect a table other policies are given. Cached, it is a job of its
    own before the first table's write (adaptive execution materialises a cached plan first).
    Not cached, the rare micro-batch whose keys set rows aside (late or quarantined) steps them
    again to write those: the same rows, state and watermark give the same rows, and the state
    files the second step writes replace the first's before the state is published."""
    return len(tables) > 1 or any(t.name in shared for t in tables)


def _spread_unkeyed(keyed: DataFrame, policy: Incremental[Any]) -> DataFrame:
    """Rows of `policy.unkeyed` inputs naming no key, given to every other key in the batch or the
    state (the step fills the key's fields in), or kept under the null key when there is none."""
    null_key = _null_key(policy)
    unkeyed = _unkeyed(policy)
    known = keyed.where(F.col("key") != null_key).agg(F.collect_set("key").alias("keys"))
    targets = known.select(F.explode(F.when(F.size("keys") > 0, F.col("keys"))
                                     .otherwise(F.array(F.lit(null_key)))).alias("key"))
    spread = keyed.where(unkeyed).drop("key").crossJoin(targets)
    return keyed.where(~unkeyed).unionByName(spread)


def _null_key(policy: Incremental[Any]) -> str:
    """The key (as the source writes it) of a row that names none of the policy's key fields."""
    return json.dumps(dict.fromkeys(policy.key), separators=(",", ":"))


def _unkeyed(policy: Incremental[Any]) -> Column:
    """A row of one of `policy.unkeyed`'s inputs that names no key."""
    return F.col("input").isin(list(policy.unkeyed)) & (F.col("key") == _null_key(policy))


def _json_row(row: dict[str, Any]) -> str:
    return json.dumps(row, separators=(",", ":"), default=str)


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    """A storage decision row as the client quotas read it (`ts_ms` and the factor's columns)."""
    return {k: row.get(k) for k in IN_FORCE_COLUMNS}


IN_FORCE_COLUMNS = ("ts_ms", "cluster", "observing_broker_id", "throttle_factor")
#: the table the client quotas are given (the storage decisions, `Incremental.broadcast`)
STORAGE_DECISIONS = "storage_decisions"


def _in_force(rows: list[dict[str, Any]], keep_from: int | None) -> list[dict[str, Any]]:
    """The storage decisions a client-quota key may still need: per source (cluster, observing
    broker) the last one before `keep_from` in decision order (time, then the smallest factor;
    `clients.engine.storage_factor`), and every one at or after it (requests from `keep_from` on
    are not decided yet). With `keep_from` None (after the flush), the last one per source."""
    latest: dict[tuple[Any, Any], dict[str, Any]] = {}
    later: dict[str, dict[str, Any]] = {}
    for row in rows:
        if keep_from is not None and row["ts_ms"] >= keep_from:
            later[_json_row(row)] = row
            continue
        source = (row["cluster"], row["observing_broker_id"])
        seen = latest.get(source)
        if seen is None or _order(row) >= _order(seen):
            latest[source] = row
    return sorted([*latest.values(), *later.values()],
                  key=lambda r: (*_order(r), str(r["cluster"]), r["observing_broker_id"] or -1))


def _order(row: dict[str, Any]) -> tuple[int, float]:
    return row["ts_ms"], -row["throttle_factor"]
