"""Interpreted expressions for small runs: counting the input rows without Spark, the threshold's
boundary, and the session's factory mode set only inside and restored after."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from quotaplane.core.errors import ConfigError, InputError
from quotaplane.core.spark.expressions import (
    DEFAULT_INTERPRETED_BELOW_ROWS,
    FACTORY_MODE,
    GENERATED,
    INTERPRETED,
    THRESHOLD,
    count_rows,
    expressions_for,
    interpreted_below_rows,
)
from tests.support.fake_spark import FakeSpark


def lines(path: Path, n: int, last_break: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join("{}" for _ in range(n))
    path.write_text(text + ("\n" if last_break and n else ""))
    return path


def test_count_rows_of_files_and_folders(tmp_path: Path) -> None:
    assert count_rows([str(lines(tmp_path / "a.jsonl", 3))], 100) == 3
    assert count_rows([str(lines(tmp_path / "b.jsonl", 3, last_break=False))], 100) == 3
    assert count_rows([str(lines(tmp_path / "empty.jsonl", 0))], 100) == 0
    folder = tmp_path / "volumes"
    lines(folder / "part-0.jsonl", 5)
    lines(folder / "day=1" / "part-1.csv", 2)
    lines(folder / "_SUCCESS", 7)  # what Spark does not read is not counted
    lines(folder / ".part-0.jsonl.crc", 7)
    lines(folder / "_hidden" / "part-9.jsonl", 7)
    pq.write_table(pa.table({"x": list(range(11))}), folder / "part-2.parquet")
    assert count_rows([str(folder)], 100) == 5 + 2 + 11
    assert count_rows([str(folder), str(tmp_path / "a.jsonl")], 100) == 21
    assert count_rows([], 100) == 0


def test_a_file_named_parquet_without_a_parquet_footer_is_named_with_the_rule(tmp_path: Path) -> None:
    folder = tmp_path / "volumes"
    lines(folder / "part-0.parquet", 1)
    with pytest.raises(InputError, match=r"part-0\.parquet.*is not a readable Parquet file"):
        count_rows([str(folder)], 100)


def test_counting_stops_at_the_limit(tmp_path: Path) -> None:
    big = lines(tmp_path / "big.jsonl", 5_000)
    assert count_rows([str(big)], 4_999) == 4_999
    assert count_rows([str(big)], 5_000) == 5_000
    assert count_rows([str(big)], 5_001) == 5_000
    assert count_rows([str(lines(tmp_path / "a.jsonl", 3)), str(big)], 10) == 10


def test_inputs_that_cannot_be_counted(tmp_path: Path) -> None:
    assert count_rows([str(tmp_path / "absent")], 100) is None
    assert count_rows(["s3a://bucket/volumes"], 100) is None
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "part-0.jsonl.gz").write_bytes(b"\x1f\x8b")
    assert count_rows([str(tmp_path / "v")], 100) is None


def test_the_threshold_property() -> None:
    assert interpreted_below_rows(FakeSpark()) == DEFAULT_INTERPRETED_BELOW_ROWS == 50_000
    assert interpreted_below_rows(FakeSpark(**{THRESHOLD: "0"})) == 0
    assert interpreted_below_rows(FakeSpark(**{THRESHOLD: "7"})) == 7
    for bad in ("-1", "1e5", "", "many"):
        rule = f"^{THRESHOLD}={bad}: must be a whole number of rows, 0 or more"
        with pytest.raises(ConfigError, match=rule):
            interpreted_below_rows(FakeSpark(**{THRESHOLD: bad}))


@pytest.mark.parametrize(("rows", "mode"),
                         [(0, INTERPRETED), (9, INTERPRETED), (10, GENERATED), (11, GENERATED)])
def test_fewer_rows_than_the_threshold_are_interpreted(tmp_path: Path, rows: int, mode: str) -> None:
    spark = FakeSpark(**{THRESHOLD: "10"})
    with expressions_for(spark, [str(lines(tmp_path / "in.jsonl", rows))]) as choice:
        assert spark.conf.get(FACTORY_MODE, GENERATED) == mode
    assert spark.conf.get(FACTORY_MODE, GENERATED) == GENERATED
    expected = (f"{rows:,} input rows, fewer than {THRESHOLD}=10" if mode == INTERPRETED
                else f"10 input rows or more, {THRESHOLD}=10")
    named = "interpreted" if mode == INTERPRETED else "generated"
    assert choice.as_dict() == {"mode": named, "reason": expected}


def test_the_mode_is_restored_when_the_run_fails(tmp_path: Path) -> None:
    spark = FakeSpark()
    with pytest.raises(RuntimeError), expressions_for(spark, [str(lines(tmp_path / "in.jsonl", 1))]):
        assert spark.conf.get(FACTORY_MODE, GENERATED) == INTERPRETED
        raise RuntimeError("the stage failed")
    assert spark.conf.get(FACTORY_MODE, GENERATED) == GENERATED


def test_off_uncountable_or_chosen_by_the_user(tmp_path: Path) -> None:
    small = [str(lines(tmp_path / "in.jsonl", 1))]
    off = FakeSpark(**{THRESHOLD: "0"})
    with expressions_for(off, small) as choice:
        assert off.conf.get(FACTORY_MODE, GENERATED) == GENERATED
    assert choice.as_dict() == {"mode": "generated", "reason": f"{THRESHOLD}=0"}
    remote = FakeSpark()
    with expressions_for(remote, ["hdfs://nn/telemetry/volumes"]) as choice:
        assert remote.conf.get(FACTORY_MODE, GENERATED) == GENERATED
    assert choice.mode == "generated" and choice.reason.startswith("inputs not counted")
    chosen = FakeSpark(**{FACTORY_MODE: "CODEGEN_ONLY"})
    with expressions_for(chosen, small) as choice:
        assert chosen.conf.get(FACTORY_MODE, GENERATED) == "CODEGEN_ONLY"
    assert choice.as_dict() == {"mode": "as configured", "reason": f"{FACTORY_MODE}=CODEGEN_ONLY"}


@pytest.mark.spark
def test_a_spark_session_takes_the_mode_and_gives_the_same_results(spark, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    def query() -> list[tuple[int, int, str]]:
        df = spark.range(0, 40).select((F.col("id") % 7).alias("k"), F.col("id"))
        out = (df.where(F.col("id") % 3 != 0).groupBy("k")
               .agg(F.sum(F.col("id") * 2).alias("s"), F.max_by(F.col("id").cast("string"), "id").alias("m")))
        return sorted((r["k"], r["s"], r["m"]) for r in out.collect())

    generated = query()
    with expressions_for(spark, [str(lines(tmp_path / "in.jsonl", 3))]) as choice:
        assert spark.conf.get(FACTORY_MODE) == INTERPRETED
        interpreted = query()
    assert choice.mode == "interpreted"
    assert spark.conf.get(FACTORY_MODE) == GENERATED
    assert interpreted == generated and len(generated) == 7
