"""A micro-batch's keys stepped by Spark's tasks or in the driver: the same answers, states and
tables (`quotaplane.stream.spark.answers`), and the line between them read from the session."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from quotaplane.core.errors import ConfigError
from quotaplane.core.incremental import QUARANTINE
from quotaplane.core.spark.task_writes import arrow_parquet_options
from quotaplane.stream.keyed import LATE_TABLE, STATE, partition_step
from quotaplane.stream.spark.answers import (
    DEFAULT_DRIVER_STEP_BELOW_ROWS,
    DRIVER_STEP,
    DriverAnswers,
    SparkAnswers,
    driver_step_below_rows,
)
from tests.stream.echo import TABLE, Echo
from tests.support.fake_spark import FakeSpark

NAMES = [STATE, TABLE.name, LATE_TABLE, QUARANTINE]


def test_the_line_is_ten_thousand_rows_unless_the_session_sets_it() -> None:
    assert driver_step_below_rows(FakeSpark()) == DEFAULT_DRIVER_STEP_BELOW_ROWS == 10_000
    assert driver_step_below_rows(FakeSpark(**{DRIVER_STEP: "0"})) == 0
    assert driver_step_below_rows(FakeSpark(**{DRIVER_STEP: "250000"})) == 250_000


@pytest.mark.parametrize("value", ["-1", "ten", "1.5", ""])
def test_a_line_that_is_not_a_count_of_rows_names_the_property_the_value_and_the_rule(value: str) -> None:
    with pytest.raises(ConfigError) as error:
        driver_step_below_rows(FakeSpark(**{DRIVER_STEP: value}))
    assert str(error.value).startswith(f"{DRIVER_STEP}={value}: must be a whole number of rows, 0 or more")


def _keyed(spark):
    rows = [(json.dumps({"k": k}, separators=(",", ":")), "events",
             json.dumps({"ts": ts, "k": k, "v": 0.5, "_file": 1, "_position": ts}), None)
            for k, ts in (("a", 3_000), ("b", 1_000), ("a", 1_000), ("c", 9_000), ("b", 2_000))]
    return spark.createDataFrame(rows, "key string, input string, row string, state binary")


@pytest.mark.spark
@pytest.mark.parametrize("stamps", ["INT96", "TIMESTAMP_MICROS"])
def test_the_driver_steps_and_writes_as_the_spark_step_does(spark, tmp_path: Path, stamps: str) -> None:
    keyed = _keyed(spark)
    spark.conf.set("spark.sql.parquet.outputTimestampType", stamps)
    try:
        answers = {}
        for where in ("spark", "driver"):
            step = partition_step(Echo(), None, 5_000, str(tmp_path / where / "state"))
            stepped = (SparkAnswers(keyed, step, [TABLE], 1, cache=False) if where == "spark"
                       else DriverAnswers(spark, keyed, step, [TABLE], arrow_parquet_options(spark)))
            answers[where] = (stepped.count(NAMES, tmp_path / where / TABLE.name),
                              sorted(stepped.rows(TABLE), key=lambda r: (r["k"], r["ts"])))
    finally:
        spark.conf.unset("spark.sql.parquet.outputTimestampType")
    (counted, rows), (driver_counted, driver_rows) = answers["spark"], answers["driver"]
    assert counted.rows == driver_counted.rows == {STATE: 3, TABLE.name: 4, LATE_TABLE: 0, QUARANTINE: 0}
    assert counted.through == driver_counted.through == 5_000  # `c` waits at 9000, past the watermark
    assert sorted(counted.outcomes) == sorted(driver_counted.outcomes)
    assert rows == driver_rows and [(r["k"], r["ts"], r["seen"]) for r in rows] == [
        ("a", 1_000, 0), ("a", 3_000, 1), ("b", 1_000, 0), ("b", 2_000, 1)]

    def written(where: str) -> tuple[list[tuple], str, list[tuple]]:
        folder = tmp_path / where
        table = spark.read.parquet(str(folder / TABLE.name))
        stamp = pq.ParquetFile(next((folder / TABLE.name).glob("part-*.parquet"))).schema.column(1)
        states = pq.read_table(folder / "state").to_pylist()
        return (sorted(tuple(r) for r in table.collect()), f"{stamp.physical_type} {stamp.logical_type}",
                sorted((s["key"], s["state"]) for s in states))

    spark_table, spark_stamp, spark_states = written("spark")
    driver_table, driver_stamp, driver_states = written("driver")
    assert driver_table == spark_table and len(spark_table) == 4
    assert driver_stamp == spark_stamp
    assert spark_stamp.startswith("INT96" if stamps == "INT96" else "INT64 Timestamp")
    assert [k for k, _ in driver_states] == [k for k, _ in spark_states] == ['{"k":"a"}', '{"k":"b"}',
                                                                             '{"k":"c"}']
    assert [pickle.loads(s) for _, s in driver_states] == [pickle.loads(s) for _, s in spark_states]
