"""The line and field rules of `quotaplane.core.fields` as Spark column expressions (no Python UDF).

A JSON Lines line is read as text, checked to be exactly one JSON object (`line_reason`) and parsed
once into a VARIANT; each field is then typed from its JSON kind and value (`typed_value`) and
checked (`field_outcome`). Text formats (CSV, a Parquet column of another type) give every field as
a string (JSON kind STRING).
The patterns, ranges and reasons are those of `quotaplane.core.fields`, so both engines classify
every row alike (tests/core/test_field_rules.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from pyspark.sql import Column
from pyspark.sql import functions as F

from quotaplane.core import fields as R
from quotaplane.core.records import Field

# A JSON string token (RFC 8259): replaced by "" before the brackets are counted, and one of the
# scalars a whole line may be. Written as a run of plain characters between escapes (the same strings
# as `"(?:[^"\\]|\\.)*"`: a backslash is only ever taken with the character after it), which Java's
# matcher takes without a step per character. A line's end is `\z`: Java's `$` also matches before a
# final line terminator (NEL, LINE or PARAGRAPH SEPARATOR, none of them JSON whitespace), which would
# take a value with one after it for a whole line.
_STRING_TOKEN = '"[^"\\\\]*(?:\\\\.[^"\\\\]*)*"'
_SCALAR = (f'^(?:{_STRING_TOKEN}|-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?'
           '|true|false|null)\\z')
MS_PER_DAY = 86_400_000


def strip_bom(raw: Column) -> Column:
    return F.regexp_replace(raw, "^\ufeff", "")


def _trim_json_space(line: Column) -> Column:
    """The line without JSON whitespace (`fields.JSON_SPACES`) at either end: `btrim` reads only
    the line's ends, where a regular expression would match and copy the whole line."""
    return F.btrim(line, F.lit(R.JSON_SPACES))


def is_blank(line: Column) -> Column:
    """The line holds JSON whitespace only (or nothing)."""
    return _trim_json_space(line) == ""


# The parts of a line `_one_value` reads, each a column of its own (see `line_parts`).
TRIMMED, STRIPPED, BRACKETS = "_trimmed", "_stripped", "_brackets"


def line_parts(line: Column) -> list[tuple[str, Column]]:
    """The columns `line_reason` reads besides the line, in order: each is computed from the one
    before, so each is best projected on its own, after it (a part read by several branches of a
    CASE WHEN is otherwise computed again for each): the line trimmed of JSON whitespace, with
    every string token replaced by "", and its brackets alone."""
    return [(TRIMMED, _trim_json_space(line)),
            (STRIPPED, F.regexp_replace(F.col(TRIMMED), _STRING_TOKEN, '""')),
            (BRACKETS, F.regexp_replace(F.col(STRIPPED), "[^\\[\\]{}]+", ""))]


def _one_value() -> Column:
    """True when the trimmed line is one JSON value with nothing after it (the grammar itself is
    checked by the parser): a scalar token, or brackets that close exactly once, at the end."""
    trimmed, stripped, brackets = F.col(TRIMMED), F.col(STRIPPED), F.col(BRACKETS)
    depth = F.aggregate(
        F.split(brackets, ""), F.struct(F.lit(0).alias("d"), F.lit(0).alias("z")),
        lambda acc, c: F.struct(
            (acc["d"] + F.when(c.isin("{", "["), 1).otherwise(-1)).alias("d"),
            (acc["z"] + F.when(acc["d"] + F.when(c.isin("{", "["), 1).otherwise(-1) == 0, 1)
             .otherwise(0)).alias("z")))
    closes_once = F.when(brackets.isin("{}", "[]"), F.lit(True)).otherwise(
        (depth["z"] == 1) & (depth["d"] == 0))
    opens = stripped.startswith("{") | stripped.startswith("[")
    structured = (stripped.endswith("}") | stripped.endswith("]")) & closes_once
    return F.when(opens, structured).otherwise(trimmed.rlike(_SCALAR))


def line_reason(raw: Column, parsed: Column) -> Column:
    """Why a (non-blank) line is quarantined as a whole, or null; reads the `line_parts` columns
    (a non-blank line starts where its trimmed form does)."""
    return (F.when(~F.is_valid_utf8(raw), F.lit(R.NOT_UTF8))
            .when(parsed.isNull() | ~_one_value(), F.lit(R.UNPARSABLE))
            .when(~F.col(TRIMMED).startswith("{"), F.lit(R.NOT_OBJECT)))


def quarantined_text(raw: Column) -> Column:
    """The line as it goes to the quarantine table: valid UTF-8 always (`hex:` and the bytes in
    hexadecimal when the line is not UTF-8)."""
    return F.when(F.is_valid_utf8(raw), raw).otherwise(F.concat(F.lit("hex:"), F.hex(raw)))


JsonValue = Callable[[str], Column]
# A field's text from its JSON kind (best the kind's own column: see `json_field`).
TextOf = Callable[[Column], Column]


def json_field(parsed: Column, name: str) -> tuple[Column, TextOf, JsonValue]:
    """(kind, text of kind, value) of field `name` of a parsed line: its JSON kind
    (`schema_of_variant`: STRING, BIGINT, DECIMAL(p,s), DOUBLE, BOOLEAN, VOID for null, OBJECT<..>,
    ARRAY<..>; null when absent), its text given its kind (the string when the kind is STRING: given
    the kind's projected column, the kind is not computed again for it) and a getter of its value
    as a Spark type."""
    path = f"$.{name}"
    kind = F.schema_of_variant(F.try_variant_get(parsed, path, "variant"))

    def text(kind_column: Column) -> Column:
        return F.when(kind_column == "STRING", F.try_variant_get(parsed, path, "string"))

    return kind, text, lambda spark_type: F.try_variant_get(parsed, path, spark_type)


def text_field(text: Column) -> tuple[Column, TextOf, JsonValue | None]:
    """(kind, text of kind, None) of a field read as text (CSV, a Parquet column of another type)."""
    return F.when(text.isNotNull(), F.lit("STRING")), lambda _kind: text, None


def _iso_millis(text: Column) -> Column:
    """Epoch milliseconds of an ISO-8601 text of the accepted form, or null (`fields.iso_millis`).

    A text of that form has its pattern's eight groups extracted once, into an array bound to a
    lambda's parameter; any other text is matched once, and no group is extracted.
    `_iso_from_groups` reads most groups several times: written out at each use, the expression
    held 30 matches of the pattern, most of them evaluated for every text (Spark does not share a
    subexpression inside the branches of a CASE WHEN)."""
    groups = F.array(*[F.regexp_extract(text, R.JAVA["iso"], i) for i in range(1, 9)])
    return F.when(text.rlike(R.JAVA["iso"]), F.transform(F.array(groups), _iso_from_groups)[0])


def _iso_from_groups(groups: Column) -> Column:
    """`_iso_millis` of a text of the accepted form, from its pattern's groups (an array of eight
    texts, "" for a group not matched): null for a date that does not exist."""
    def part(i: int) -> Column:
        return groups[i - 1]

    def number(i: int) -> Column:
        return F.when(part(i) == "", F.lit(0)).otherwise(part(i).cast("long"))

    year, month, day = number(1), number(2), number(3)
    first = F.make_date(F.when(year >= 1, year).otherwise(F.lit(1)).cast("int"), month.cast("int"), F.lit(1))
    valid = (year >= 1) & (day <= F.dayofmonth(F.last_day(first)))
    days = F.datediff(first, F.lit("1970-01-01").cast("date")).cast("long") + day - 1
    fraction = F.substring(F.concat(part(7), F.lit("000")), 1, 3).cast("long")
    zone = part(8)
    offset = F.when((zone == "") | (zone == "Z"), F.lit(0)).otherwise(
        F.when(zone.startswith("+"), F.lit(1)).otherwise(F.lit(-1))
        * (F.substring(zone, 2, 2).cast("long") * 60 + F.substring(zone, 5, 2).cast("long")) * 60_000)
    millis = (days * MS_PER_DAY + number(4) * 3_600_000 + number(5) * 60_000 + number(6) * 1000 + fraction
              - offset)
    return F.when(valid, millis)


def _trimmed(text: Column) -> Column:
    return F.regexp_replace(text, "^[ \\t]+|[ \\t]+\\z", "")


def _integer_text(text: Column) -> Column:
    """The long of an integer text within the LONG range, else null."""
    return F.when(text.rlike(R.JAVA["integer"]), _trimmed(text).try_cast("long"))


def typed_value(f: Field, kind: Column, text: Column, value: JsonValue | None) -> Column:
    """The value of field `f` as its Spark type, from its JSON kind and text (`json_field`,
    `text_field`), or null when it does not hold one; a double may still be NaN or infinite
    (`field_outcome` says so)."""
    is_string = kind == "STRING"
    if f.type == "string":
        return F.when(is_string, text)
    if f.type == "long":
        typed = F.when(is_string, _integer_text(text))
        return typed if value is None else F.when(kind == "BIGINT", value("long")).otherwise(typed)
    if f.type == "time_ms":
        typed = F.when(is_string, F.coalesce(_integer_text(text), F.when(~text.rlike(R.JAVA["integer"]),
                                                                         _iso_millis(text))))
        return typed if value is None else F.when(kind == "BIGINT", value("long")).otherwise(typed)
    if f.type == "bool":
        typed = F.when(is_string & text.rlike(R.JAVA["bool"]), F.lower(_trimmed(text)) == "true")
        return typed if value is None else F.when(kind == "BOOLEAN", value("boolean")).otherwise(typed)
    typed = F.when(is_string & text.rlike(R.JAVA["decimal"]), _trimmed(text).try_cast("double"))
    if value is None:
        return typed
    numeric = kind.isin("BIGINT", "DOUBLE", "FLOAT") | kind.startswith("DECIMAL")
    return F.when(numeric, value("double")).otherwise(typed)


def field_outcome(f: Field, kind: Column, text: Column, value: JsonValue | None,
                  typed: Column) -> tuple[Column, Column]:
    """(value, problem) of field `f` given its `typed_value` (`typed`, best a column of its own: it
    is read several times): the value is null when the field is missing or has a problem; the
    problem is null for a valid or absent optional field, else the reason as the quarantine table
    gives it (`field <name>[=<value>]: <rule>`)."""
    is_string = kind == "STRING"
    missing = kind.isNull() | (kind == "VOID") | (
        is_string & F.lit(f.type != "string") & (F.regexp_replace(text, "[ \\t]", "") == ""))
    shown = text if value is None else F.coalesce(text, F.to_json(value("variant")))
    expected = F.format_string(f"field {f.name}=%s: {R.EXPECTED[f.type]}", shown)
    if f.type == "double":
        not_finite = (is_string & text.rlike(R.JAVA["non_finite"])) | F.isnan(typed) | (
            F.abs(typed) == F.lit(math.inf))
        bad = F.when(not_finite, F.format_string(f"field {f.name}=%s: {R.NOT_FINITE}", shown)).when(
            typed.isNull(), expected)
        typed = F.when(~F.isnan(typed) & (F.abs(typed) != F.lit(math.inf)), typed)
    else:
        bad = F.when(typed.isNull(), expected)
    if f.required:
        reason = F.when(missing, F.lit(f"field {f.name}: {R.MISSING}")).otherwise(bad)
    else:
        reason = F.when(~missing, bad)
    return F.when(~missing, typed), reason


def native_problem(f: Field, column: Column) -> Column:
    """The problem of a Parquet column already of the field's type: missing, or not finite."""
    problem = F.when(column.isNull(), F.lit(f"field {f.name}: {R.MISSING}")) if f.required else F.lit(None)
    if f.type == "double":
        problem = F.coalesce(problem, F.when(
            F.isnan(column) | (F.abs(column) == F.lit(math.inf)),
            F.format_string(f"field {f.name}=%s: {R.NOT_FINITE}", column.cast("string"))))
    return problem.cast("string")
