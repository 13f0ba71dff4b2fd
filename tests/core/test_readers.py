"""The generic reader: every row is used or quarantined with a reason, in every format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from quotaplane.core.errors import InputError
from quotaplane.core.records import Field, RecordSchema, Rule
from quotaplane.core.spark.readers import UsedAggregate, check_once, read_telemetry
from tests.support.plans import operators, plan_text

SCHEMA = RecordSchema(
    name="sample",
    fields=(
        Field("ts", "time_ms"),
        Field("broker_id", "long"),
        Field("size", "double"),
        Field("name", "string", required=False),
    ),
    rules=(
        Rule("size must not be negative", lambda c: c["size"] < 0,
             lambda r: r["size"] < 0),
    ),
)

ROWS = [
    '{"ts": 1000, "broker_id": 1, "size": 2.5, "name": "a"}',
    '{"ts": "2026-01-01T00:00:00Z", "broker_id": "2", "size": 1}',
    '{"ts": "yesterday", "broker_id": 1, "size": 1}',
    '{"ts": 1000, "size": 1}',
    '{"ts": 1000, "broker_id": 1.5, "size": 1}',
    '{"ts": 1000, "broker_id": 1, "size": -1}',
    "this is not json",
]


@pytest.fixture
def jsonl(tmp_path: Path) -> Path:
    path = tmp_path / "sample.jsonl"
    path.write_text("\n".join(ROWS) + "\n")
    return path


@pytest.mark.spark
def test_jsonl_rows_are_used_or_quarantined_with_reasons(spark, jsonl: Path) -> None:
    result = read_telemetry(spark, SCHEMA, str(jsonl))
    counts = result.counts()
    assert (counts.read, counts.used, counts.quarantined) == (7, 2, 5)
    used = sorted((r.asDict() for r in result.used.collect()), key=lambda r: r["broker_id"])
    assert used[0] == {"ts": 1000, "broker_id": 1, "size": 2.5, "name": "a"}
    assert used[1]["ts"] == 1767225600000 and used[1]["broker_id"] == 2
    reasons = {r["reason"] for r in result.quarantined.collect()}
    assert reasons == {
        "field ts=yesterday: must be epoch milliseconds or an ISO-8601 timestamp",
        "field broker_id: missing required field",
        "field broker_id=1.5: must be a whole number within a LONG (no fraction, no exponent)",
        "size must not be negative",
        "unparsable record",
    }
    bad = result.quarantined.where(F.col("reason") == "unparsable record").first()
    assert bad["row"] == "this is not json"


@pytest.mark.spark
def test_check_once_aggregates_the_used_rows_in_its_counting_scan(spark, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"ts": 1000, "broker_id": 1, "size": 2}\n{"ts": 3000, "broker_id": 9, "size": -1}\n'
                    '{"ts": 2000, "broker_id": 2, "size": 1}\n')
    checked = check_once(read_telemetry(spark, SCHEMA, str(path)), None,
                         over_used={"last": UsedAggregate("max", "ts"),
                                    "first_broker": UsedAggregate("min", "broker_id")})
    assert (checked.counts.used, checked.counts.quarantined) == (2, 1)
    assert checked.aggregates == {"last": 2000, "first_broker": 1}  # the quarantined row is left out
    checked.release()
    path.write_text('{"ts": 3000, "broker_id": 9, "size": -1}\n')
    none_used = check_once(read_telemetry(spark, SCHEMA, str(path)), None,
                           over_used={"last": UsedAggregate("max", "ts")})
    assert none_used.aggregates == {"last": None} and check_once(
        read_telemetry(spark, SCHEMA, str(path)), None).aggregates == {}


@pytest.mark.spark
def test_used_rows_are_not_checked_again_when_nothing_was_quarantined(spark, tmp_path: Path) -> None:
    rows = [(1000, 1, 2.0, "a"), (2000, 2, 0.0, None)]
    good, bad = tmp_path / "good", tmp_path / "bad"
    spark.createDataFrame(rows, "ts long, broker_id long, size double, name string").write.parquet(str(good))
    spark.createDataFrame([*rows, (3000, 3, -1.0, "c")], "ts long, broker_id long, size double, name string"
                          ).write.parquet(str(bad))

    def used(path: Path) -> tuple[list[tuple], int, str]:
        checked = check_once(read_telemetry(spark, SCHEMA, str(path)), None)
        got = sorted(tuple(r) for r in checked.used.collect())
        return got, operators(checked.used)["Filter"], plan_text(checked.used)

    all_used, filters, plan = used(good)
    assert all_used == sorted(rows)
    # the rule (and the required fields' checks) are not in the plan: no filter, no reason
    assert filters == 0 and "must not be negative" not in plan and "missing" not in plan
    some_used, filters, plan = used(bad)
    assert some_used == sorted(rows)
    assert filters == 1 and "must not be negative" in plan


@pytest.mark.spark
def test_csv_and_parquet_read_the_same_rows(spark, tmp_path: Path) -> None:
    csv = tmp_path / "s.csv"
    csv.write_text("ts,broker_id,size,name\n1000,1,2.5,a\n1000,x,1,\n")
    result = read_telemetry(spark, SCHEMA, str(csv))
    assert (result.counts().used, result.counts().quarantined) == (1, 1)
    pq = tmp_path / "pq"
    result.used.write.parquet(str(pq))
    again = read_telemetry(spark, SCHEMA, str(pq))
    assert again.used.collect() == result.used.collect()


@pytest.mark.spark
def test_typed_parquet_columns_are_used_as_they_are_and_others_checked_as_text(spark, tmp_path) -> None:
    from datetime import UTC, datetime

    pq = tmp_path / "typed"
    rows = [(datetime(2026, 1, 1, tzinfo=UTC), 1, 1.5, 2.5, "a"),   # native types: used as they are
            (datetime(2026, 1, 1, tzinfo=UTC), None, 1.0, 1.0, None),  # required value missing
            (None, 2, 2.0, 0.1, "b"),                                 # required time missing
            (datetime(2026, 1, 1, tzinfo=UTC), 3, 3.0, -1.0, "c")]    # a row rule still applies
    spark.createDataFrame(rows, "ts timestamp, broker_id int, other double, size float, name string") \
        .write.parquet(str(pq))
    result = read_telemetry(spark, SCHEMA, str(pq))
    used = result.used.collect()
    assert [(r["ts"], r["broker_id"], r["size"], r["name"]) for r in used] == [(1767225600000, 1, 2.5, "a")]
    assert [f.dataType.simpleString() for f in result.used.schema.fields] == [
        "bigint", "bigint", "double", "string"]
    reasons = sorted(r["reason"] for r in result.quarantined.collect())
    assert reasons == ["field broker_id: missing required field", "field ts: missing required field",
                       "size must not be negative"]
    # a float column is read as text, so 0.1 stays 0.1 (not 0.10000000149...)
    floats = tmp_path / "floats"
    spark.createDataFrame([(1000, "7", 0.1)], "ts long, broker_id string, size float") \
        .write.parquet(str(floats))
    (row,) = read_telemetry(spark, SCHEMA, str(floats)).used.collect()
    assert (row["broker_id"], row["size"]) == (7, 0.1)
    # a column of a foreign type is checked as text: a double is not a whole number
    wrong = tmp_path / "wrong"
    spark.createDataFrame([(1000, 1.5, 1.0)], "ts long, broker_id double, size double") \
        .write.parquet(str(wrong))
    (bad,) = read_telemetry(spark, SCHEMA, str(wrong)).quarantined.collect()
    assert bad["reason"] == ("field broker_id=1.5: must be a whole number within a LONG "
                             "(no fraction, no exponent)")


def test_reference_coercion_matches_the_rules() -> None:
    assert SCHEMA.coerce_record(json.loads(ROWS[1]), "f:2")["ts"] == 1767225600000
    with pytest.raises(InputError, match="f:4: field 'broker_id'=None: missing required field"):
        SCHEMA.coerce_record(json.loads(ROWS[3]), "f:4")
    with pytest.raises(InputError, match="size must not be negative"):
        SCHEMA.coerce_record(json.loads(ROWS[5]), "f:6")


@pytest.mark.spark
def test_a_field_named_reason_is_kept(spark, tmp_path: Path) -> None:
    from quotaplane.storage.records import COLLECTION_ERRORS

    path = tmp_path / "errors.jsonl"
    path.write_text('{"ts": 1, "reason": "DESCRIBE_LOG_DIR_ERROR"}\n{"ts": 2, "reason": ""}\n')
    result = read_telemetry(spark, COLLECTION_ERRORS, str(path))
    assert [r["reason"] for r in result.used.collect()] == ["DESCRIBE_LOG_DIR_ERROR"]
    assert [r["reason"] for r in result.quarantined.collect()] == ["reason must not be empty"]


@pytest.mark.spark
def test_a_line_is_the_unit_and_read_counts_lines(spark, tmp_path: Path) -> None:
    good = '{"ts": 1000, "broker_id": 1, "size": 2}'
    lines = [good, "", good + good, "[]", f"[{good}, {good}]", good + " trailing", "   ", "\t"]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = read_telemetry(spark, SCHEMA, str(path))
    counts = result.counts()
    assert (counts.read, counts.used, counts.quarantined) == (5, 1, 4)  # blank lines are not counted
    reasons = sorted((r["reason"], r["row"]) for r in result.quarantined.collect())
    assert reasons == sorted([("unparsable record", good + good), ("not a JSON object", "[]"),
                              ("not a JSON object", f"[{good}, {good}]"),
                              ("unparsable record", good + " trailing")])


@pytest.mark.spark
def test_lines_that_are_not_utf8_are_quarantined_as_valid_utf8(spark, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"ts": 1000, "broker_id": 1, "size": 2}\n{"ts": 1000, "name": "\xff\xfe"}\n')
    result = read_telemetry(spark, SCHEMA, str(path))
    out = tmp_path / "quarantine"
    result.quarantined.write.parquet(str(out))
    (row,) = pq.read_table(str(out)).to_pylist()  # any Parquet reader reads it
    assert row["reason"] == "not UTF-8"
    assert row["row"] == "hex:" + b'{"ts": 1000, "name": "\xff\xfe"}'.hex().upper()


@pytest.mark.spark
def test_files_spark_does_not_read_are_listed_as_skipped(spark, tmp_path: Path) -> None:
    folder = tmp_path / "sample"
    (folder / "_late").mkdir(parents=True)
    row = '{"ts": 1000, "broker_id": 1, "size": 2}\n'
    for name in ("part-0.jsonl", "_late.jsonl", ".hidden.jsonl", "_late/part-1.jsonl", "_SUCCESS",
                 ".part-0.jsonl.crc"):
        (folder / name).write_text(row)
    result = read_telemetry(spark, SCHEMA, str(folder))
    counts = result.counts()
    assert counts.read == 1
    assert [Path(s).relative_to(folder).as_posix() for s in counts.skipped] == [
        ".hidden.jsonl", "_late/part-1.jsonl", "_late.jsonl"]
    assert counts.as_dict()["skipped"] == list(counts.skipped)
