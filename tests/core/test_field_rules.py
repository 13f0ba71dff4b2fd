"""One rule set, two engines: every generated line is used or quarantined alike, for the same reason.

The reference engines' JSON Lines reader (`quotaplane.core.jsonl` + `RecordSchema.coerce_record`)
and the Spark reader (`quotaplane.core.spark.readers`) classify the same lines: a line problem (not
UTF-8, unparsable, not an object), the first field problem (field and rule), or a row rule; a used
line gives the same typed values.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quotaplane.core import fields as R
from quotaplane.core.errors import InputError
from quotaplane.core.javamath import LONG_MAX, LONG_MIN
from quotaplane.core.jsonl import json_objects, read_lines
from quotaplane.core.records import Field, RecordSchema, Rule

SCHEMA = RecordSchema(
    name="probe",
    fields=(
        Field("t", "time_ms"),
        Field("n", "long"),
        Field("x", "double", required=False),
        Field("s", "string", required=False),
        Field("b", "bool", required=False),
    ),
    rules=(Rule("n must not be negative", lambda c: c["n"] < 0, lambda r: r["n"] < 0),),
)
RULES = sorted({*R.EXPECTED.values(), R.NOT_FINITE, R.MISSING}, key=len, reverse=True)

# Values of every kind, valid and not, for any field.
longs = st.one_of(st.integers(-(2**70), 2**70),
                  st.sampled_from([LONG_MIN, LONG_MAX, LONG_MIN - 1, LONG_MAX + 1, 0, 7]))
floats = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([1.0, -0.0, 1e300, 2.5, 1e16])
numeric_text = st.one_of(longs.map(str), floats.map(repr), st.sampled_from(
    ["+5", " 12 ", "\t3", "1_000", "0x10", "1e3", ".5", "5.", "-.5e-3", "NaN", "-Infinity", "inf", "1e400",
     "", "  ", "١٢", "12\n", "true", " FALSE ", "tRuE", "yes"]))


ISO_PROBES = ["2024-W01-1", "20240101T000000Z", "2024-032", "2024-06-03T12:00:00.1234567891Z",
              "2024-06-03T24:00:00Z", "2024-06-03T23:59:60Z", "0000-01-01", "2024-02-30", "2024-02-29T00:00",
              "2023-02-29", "2024-06-03t10:00:00z", "2024-06-03T10:00:00+0100", "2024-06-03 10:00:00.5-03:30",
              "1969-12-31T23:59:59.9999Z", "9999-12-31T23:59:59.999+23:59", "2024-06-03T10"]


@st.composite
def iso_text(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        return draw(st.sampled_from(ISO_PROBES))
    year = draw(st.integers(0, 9999))
    month = draw(st.integers(1, 12) | st.integers(0, 13))
    day = draw(st.integers(1, 28) | st.integers(0, 32))
    parts = f"{year:04d}-{month:02d}-{day:02d}"
    if draw(st.booleans()):
        hour = draw(st.integers(0, 23) | st.integers(0, 24))
        minute = draw(st.integers(0, 59) | st.integers(0, 60))
        parts += draw(st.sampled_from(["T", " "])) + f"{hour:02d}:{minute:02d}"
        if draw(st.booleans()):
            parts += f":{draw(st.integers(0, 60)):02d}"
            if draw(st.booleans()):
                parts += "." + draw(st.text("0123456789", min_size=1, max_size=10))
    return parts + draw(st.sampled_from(["", "Z", "+01:00", "-05:30", "+23:59", "-00:00"]))


values = st.one_of(longs, floats, numeric_text, iso_text(), st.booleans(), st.none(),
                   st.text(max_size=6), st.lists(st.integers(), max_size=2),
                   st.dictionaries(st.sampled_from("ab"), st.integers(), max_size=1))


@st.composite
def records(draw: st.DrawFn) -> dict[str, Any]:
    """Mostly valid records, each field sometimes replaced by any value or left out."""
    record: dict[str, Any] = {"t": draw(st.one_of(st.integers(0, 2**45), iso_text())),
                              "n": draw(st.integers(0, 1000)), "x": draw(st.floats(-1e6, 1e6)),
                              "s": draw(st.text(max_size=5)), "b": draw(st.booleans())}
    for name in list(record):
        choice = draw(st.integers(0, 5))
        if choice == 0:
            record[name] = draw(values)
        elif choice == 1:
            del record[name]
    return record


@st.composite
def lines(draw: st.DrawFn) -> bytes:
    text = json.dumps(draw(records()), ensure_ascii=draw(st.booleans()))
    corruption = draw(st.integers(0, 14))
    raw = text.encode("utf-8")
    return [raw, raw, raw, raw, raw, raw,
            b"\xef\xbb\xbf" + raw,                      # a byte order mark
            raw + b"{}",                                 # two objects on a line
            raw + b" trailing",                          # garbage after the object
            b"[" + raw + b"," + raw + b"]",              # an array of objects
            b"[]",
            raw[:-1] + b',"n": 1}' if raw != b"{}" else raw,  # a duplicate key (or an extra one)
            raw.replace(b"{", b'{"z": NaN, ', 1),        # a NaN literal
            raw[: len(raw) // 2] + b"\xff\xfe" + raw[len(raw) // 2:],  # not UTF-8
            b"\t " + raw + b" \r",                       # JSON whitespace around the object
            ][corruption]


def reference(path: Path) -> list[tuple[Any, ...]]:
    """(problem, typed record) per non-blank line, as the reference engines' reader classifies it."""
    out = []
    for number, raw in enumerate(read_lines(path), start=1):
        record, reason = R.parse_line(raw)
        if record is None and reason is None:
            continue
        if reason is not None:
            out.append((reason, None))
            continue
        try:
            (_, _, obj), = json_objects([raw], "f")
            out.append((None, SCHEMA.coerce_record(obj, f"f:{number}")))
        except InputError as exc:
            if exc.field in SCHEMA.field_names and not any(r.reason == exc.rule for r in SCHEMA.rules):
                out.append(((exc.field, exc.rule), None))
            else:
                out.append((exc.rule, None))
    return out


def spark_classes(spark: Any, path: Path) -> list[tuple[Any, ...]]:
    from quotaplane.core.spark.readers import POSITION, REASON, read_telemetry

    checked = read_telemetry(spark, SCHEMA, str(path), position=True).checked
    out = []
    for row in checked.orderBy(POSITION).collect():
        reason = row[REASON]
        if reason is None:
            out.append((None, {f: row[f] for f in SCHEMA.field_names}))
        elif reason.startswith("field "):
            name = reason[len("field "):].split("=")[0].split(":")[0]
            rule = next(r for r in RULES if reason.endswith(": " + r))
            out.append(((name, rule), None))
        else:
            out.append((reason, None))
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b and type(a) is type(b)


def assert_alike(spark: Any, path: Path, raw_lines: list[bytes]) -> None:
    want, got = reference(path), spark_classes(spark, path)
    assert len(want) == len(got), (len(want), len(got))
    shown = [line for line in raw_lines if R.parse_line(line) != (None, None)]
    for line, w, g in zip(shown, want, got, strict=True):
        assert _same(w, g), f"line {line!r}:\n  reference {w}\n  spark     {g}"


@pytest.mark.spark
@settings(parent=settings.get_profile("differential"))
@given(st.lists(lines(), min_size=40, max_size=80))
def test_both_engines_classify_generated_lines_alike(spark, tmp_path_factory, raw_lines: list[bytes]) -> None:
    path = tmp_path_factory.mktemp("lines") / "probe.jsonl"
    path.write_bytes(b"\n".join(raw_lines) + b"\n")
    assert_alike(spark, path, raw_lines)


# lines ending in a terminator Java's `$` matches before: NEL, LINE and PARAGRAPH SEPARATOR in UTF-8
TERMINATED = [b'{"t": 1, "n": 1}\xe2\x80\xa8', b'{"t": 1, "n": 1}\xc2\x85', b"[1]\xe2\x80\xa9",
              b"1\xe2\x80\xa8", b'"s"\xc2\x85']
PROBES = [
    b'{"t": 1, "n": 1}{"t": 2, "n": 2}', b"[]", b'[{"t": 1, "n": 1}, {"t": 2, "n": 2}]',
    b'{"t": 1, "n": 1} x', b'{"t": 1, "n": 1.0}', b'{"t": 1, "n": 1e3}', b'{"t": 1.5, "n": 1}',
    b'{"t": "2024-W01-1", "n": 1}', b'{"t": "20240101T000000Z", "n": 1}',
    b'{"t": "2024-06-03T10:00:00.9999Z", "n": 1}', b'\xef\xbb\xbf{"t": 1, "n": 1}',
    b'{"t": 1, "n": 99999999999999999999999}', b'{"t": 1, "n": "1_000"}', b'{"t": 1, "n": 1, "x": "NaN"}',
    b'{"t": 1, "n": 1, "x": 1e400}', b'{"t": 1, "n": 1, "x": NaN}', b'{"t": 1, "n": 1, "n": 2}',
    b'{"t": 1, "n": "\xff"}', b'{"t": 1, "n": 1, "s": 5}', b'{"t": "", "n": 1}', b'{"t": 1, "n": " 7 "}',
    b'{"t": 1, "n": -3}', b'{"t": null, "n": 1}', b"  ", b"", b'{"t": 1, "n": 1, "b": "TRUE"}',
    b'{"t": 1, "n": 9223372036854775808}', b'{"t": 1, "n": -9223372036854775808}',
    b'{"t": "1969-12-31T23:59:59.9999Z", "n": 1}', b'{"t": "2024-02-30", "n": 1}', b'\x0b{"t": 1, "n": 1}',
    b'{"t": 1, "n": 1, "x": 12345678901234567890123456789012345678901234567890}',
    # brackets, quotes and backslashes inside strings; every kind of JSON whitespace around a line
    b'{"t": 1, "n": 1, "s": "a\\"}{"}', b'{"t": 1, "n": 1, "s": "\\\\"} {}', b'{"t": 1, "n": 1, "s": "]}[{"}',
    b'{"t": 1, "n": 1, "s": "\\\\\\"]"}', b'\t\r {"t": 1, "n": 1}\t ', b" \t\r ", b'\x0c{"t": 1, "n": 1}',
    # a line terminator after the value that is not JSON whitespace
    *TERMINATED,
]


@pytest.mark.spark
def test_the_probes_of_the_report_are_classified_alike(spark, tmp_path: Path) -> None:
    path = tmp_path / "probes.jsonl"
    path.write_bytes(b"\n".join(PROBES) + b"\n")
    assert_alike(spark, path, PROBES)
    classes = dict(zip([p for p in PROBES if p.strip()], reference(path), strict=True))
    assert classes[PROBES[0]] == (R.UNPARSABLE, None)
    assert classes[PROBES[1]] == (R.NOT_OBJECT, None) and classes[PROBES[2]] == (R.NOT_OBJECT, None)
    assert classes[PROBES[3]] == (R.UNPARSABLE, None)
    assert classes[PROBES[4]] == (("n", R.EXPECTED["long"]), None)
    assert classes[PROBES[10]][1] == {"t": 1, "n": 1, "x": None, "s": None, "b": None}
    assert classes[b'{"t": "1969-12-31T23:59:59.9999Z", "n": 1}'][1]["t"] == -1
    assert classes[b'{"t": 1, "n": "\xff"}'] == (R.NOT_UTF8, None)
    assert classes[b'{"t": 1, "n": 1, "s": "a\\"}{"}'][1]["s"] == 'a"}{'
    assert classes[b'{"t": 1, "n": 1, "s": "\\\\"} {}'] == (R.UNPARSABLE, None)
    assert classes[b'\t\r {"t": 1, "n": 1}\t '][1]["n"] == 1
    assert b" \t\r " not in classes  # a blank line is no row
    assert all(classes[line] == (R.UNPARSABLE, None) for line in TERMINATED)


@pytest.mark.spark
def test_a_files_byte_order_mark_is_dropped_before_the_lines_rules(spark, tmp_path: Path) -> None:
    # Spark's line reader (Hadoop's) drops a mark at the very start of a file; each line's rules
    # then ignore one more at its start
    marked = [b'\xef\xbb\xbf\xef\xbb\xbf{"t": 1, "n": 1}', b'\xef\xbb\xbf{"t": 2, "n": 2}',
              b'\xef\xbb\xbf\xef\xbb\xbf{"t": 3, "n": 3}']
    path = tmp_path / "marked.jsonl"
    path.write_bytes(b"\n".join(marked) + b"\n")
    assert_alike(spark, path, marked)
    assert [problem for problem, _ in reference(path)] == [None, None, R.UNPARSABLE]
