"""A small run's JSON Lines read in the driver: the same rows as Spark's reader, or Spark reads it."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from quotaplane.core.fields import parse_line
from quotaplane.core.spark.driver_reads import read_in_driver, read_input
from quotaplane.core.spark.readers import FILE_ID, POSITION, REASON, UsedAggregate, check_once, read_telemetry
from tests.core.test_field_rules import SCHEMA, lines

pytestmark = pytest.mark.spark
CLEAN = [b'{"t": 1000, "n": 1, "x": 2.5, "s": "a", "b": true}', b'{"t": "2024-06-03T00:00:00Z", "n": "7"}',
         b"", b'\xef\xbb\xbf{"t": 3000, "n": 0, "s": null}', b'\t{"t": 2000, "n": 2, "x": 1}\r']


def rows(frame: Any, *order: str) -> list[dict[str, Any]]:
    return [r.asDict() for r in frame.orderBy(*order).collect()]


def in_file_order(checked: Any) -> list[dict[str, Any]]:
    """The rows of a checked frame in their lines' order, without their positions."""
    return [{k: v for k, v in r.items() if k not in (FILE_ID, POSITION)} for r in rows(checked, POSITION)]


def spark_rows(spark: Any, path: Path) -> list[dict[str, Any]]:
    return in_file_order(read_telemetry(spark, SCHEMA, str(path), position=True).checked)


@settings(parent=settings.get_profile("differential"))
@given(st.lists(lines(), min_size=1, max_size=30))
def test_a_clean_input_gives_sparks_rows_and_any_other_is_left_to_spark(
        spark, tmp_path_factory, raw_lines: list[bytes]) -> None:
    folder = tmp_path_factory.mktemp("lines")
    path = folder / "probe.jsonl"
    path.write_bytes(b"\n".join(raw_lines) + b"\n")
    want = spark_rows(spark, path)
    local = read_in_driver(spark, SCHEMA, str(path), position=True)
    if all(r[REASON] is None for r in want):
        assert local is not None and in_file_order(local.checked) == want
    else:
        assert local is None
        # the lines Spark used, alone: read in the driver alike
        shown = [line for line in raw_lines if parse_line(line) != (None, None)]
        used = [line for line, r in zip(shown, want, strict=True) if r[REASON] is None]
        path = folder / "used.jsonl"
        path.write_bytes(b"\n".join(used))
        want, local = spark_rows(spark, path), read_in_driver(spark, SCHEMA, str(path), position=True)
        assert local is not None and in_file_order(local.checked) == want and len(want) == len(used)
    assert local.fmt == "jsonl"
    assert local.checked.schema == read_telemetry(spark, SCHEMA, str(path), position=True).checked.schema
    assert local.local == [{f: r[f] for f in SCHEMA.field_names} for r in want]


def test_the_clean_lines_of_the_probes_are_read_alike(spark, tmp_path: Path) -> None:
    path = tmp_path / "clean.jsonl"
    path.write_bytes(b"\n".join(CLEAN))
    local = read_in_driver(spark, SCHEMA, str(path))
    assert local is not None and len(local.local or []) == 4  # the blank line is no row
    assert rows(local.checked, "t") == rows(read_telemetry(spark, SCHEMA, str(path)).checked, "t")


def test_a_files_first_line_loses_its_byte_order_mark_as_in_sparks_text_reader(spark, tmp_path: Path) -> None:
    path = tmp_path / "marked.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"t": 1, "n": 1}\n\xef\xbb\xbf{"t": 2, "n": 2}\n')
    local = read_in_driver(spark, SCHEMA, str(path), position=True)
    assert local is not None
    assert [r["_row"] for r in in_file_order(local.checked)] == ['{"t": 1, "n": 1}', '\ufeff{"t": 2, "n": 2}']
    assert in_file_order(local.checked) == spark_rows(spark, path)


def test_a_local_read_is_counted_and_aggregated_without_a_spark_job(spark, tmp_path: Path) -> None:
    path = tmp_path / "clean.jsonl"
    path.write_bytes(b"\n".join(CLEAN))
    stale = tmp_path / "quarantine"
    stale.mkdir()
    (stale / "part-0.parquet").write_bytes(b"old")
    aggregates = {"last": UsedAggregate("max", "t"), "first": UsedAggregate("min", "n"),
                  "unnamed": UsedAggregate("max", "s", null=True), "lowest": UsedAggregate("min", "x")}
    sc = spark.sparkContext
    sc.setJobGroup("driver-read", "driver-read")
    try:
        checked = check_once(read_in_driver(spark, SCHEMA, str(path)), stale, over_used=aggregates)
        assert sc.statusTracker().getJobIdsForGroup("driver-read") == []
    finally:
        sc.setJobGroup("", "")
    by_spark = check_once(read_telemetry(spark, SCHEMA, str(path)), None, over_used=aggregates)
    assert (checked.counts.reader, by_spark.counts.reader) == ("driver", "spark")
    assert replace(checked.counts, reader="spark") == by_spark.counts and checked.counts.read == 4
    assert checked.aggregates == by_spark.aggregates == {
        "last": 1717372800000, "first": 0, "unnamed": True, "lowest": 1.0}
    assert not checked.cached and not stale.exists()  # an earlier run's quarantine is gone
    assert rows(checked.used, "t") == rows(by_spark.used, "t")
    by_spark.release()


def test_aggregates_of_no_rows_are_none(spark, tmp_path: Path) -> None:
    path = tmp_path / "blank.jsonl"
    path.write_bytes(b"\n  \n")
    checked = check_once(read_in_driver(spark, SCHEMA, str(path)), None,
                         over_used={"last": UsedAggregate("max", "t"),
                                    "null": UsedAggregate("min", "s", null=True)})
    assert checked.counts.read == 0 and checked.aggregates == {"last": None, "null": None}


def test_positions_follow_the_lines_of_one_file(spark, tmp_path: Path) -> None:
    path = tmp_path / "clean.jsonl"
    path.write_bytes(b"\n".join(CLEAN))
    local = read_in_driver(spark, SCHEMA, str(path), position=True)
    assert local is not None
    got = local.checked.orderBy(POSITION).select("t", F.col(FILE_ID).alias("file")).collect()
    assert [r["t"] for r in got] == [1000, 1717372800000, 3000, 2000] and {r["file"] for r in got} == {0}


def test_a_folder_is_read_whole_but_with_positions_only_from_one_file(spark, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    (folder / "day=2").mkdir(parents=True)
    (folder / "a.jsonl").write_text('{"t": 1, "n": 1}\n')
    (folder / "day=2" / "b.jsonl").write_text('{"t": 2, "n": 2}\n')
    (folder / ".hidden.jsonl").write_text('{"t": 3, "n": 3}\n')
    local = read_in_driver(spark, SCHEMA, str(folder))
    assert local is not None and sorted(r["t"] for r in local.local or []) == [1, 2]
    assert local.skipped == (str(folder / ".hidden.jsonl"),)
    assert read_in_driver(spark, SCHEMA, str(folder), position=True) is None


def test_other_formats_compressed_files_and_globs_are_left_to_spark(spark, tmp_path: Path) -> None:
    csv = tmp_path / "rows.csv"
    csv.write_text("t,n\n1,1\n")
    packed = tmp_path / "packed"
    packed.mkdir()
    (packed / "a.jsonl").write_text('{"t": 1, "n": 1}\n')
    with gzip.open(packed / "b.jsonl.gz", "wt") as out:
        out.write(json.dumps({"t": 2, "n": 2}) + "\n")
    for path in (str(csv), str(packed), str(packed / "*.jsonl"), str(tmp_path / "absent.jsonl")):
        assert read_in_driver(spark, SCHEMA, path) is None, path
    assert read_input(spark, SCHEMA, str(csv), in_driver=True).local is None  # Spark read it
    assert read_input(spark, SCHEMA, str(packed / "a.jsonl"), in_driver=False).local is None
    assert read_input(spark, SCHEMA, str(packed / "a.jsonl"), in_driver=True).local == [
        {"t": 1, "n": 1, "x": None, "s": None, "b": None}]
