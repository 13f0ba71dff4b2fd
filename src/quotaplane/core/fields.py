"""The rules a telemetry line and each of its fields keep, declared once for both engines.

The reference engines' readers apply them here, on Python values; the Spark readers apply the same
rules as column expressions (`quotaplane.core.spark.fields`), built from the same patterns, ranges
and reasons. tests/core/test_field_rules.py generates valid and invalid lines and values and
requires both to classify every row the same way, with the same reason. The rules (docs/telemetry.md):

A line (JSON Lines):
- blank lines are skipped and not counted; a UTF-8 byte order mark at the start of a line is ignored
  (and one at the start of a file is dropped first, as Spark's line reader drops it: `read_lines`);
- a line that is not valid UTF-8 is quarantined ("not UTF-8");
- a line must be exactly one JSON text (RFC 8259: no NaN or Infinity literals, no trailing content)
  whose object keys are unique, else "unparsable record"; a JSON text that is not an object (an
  array, a string, ...) is "not a JSON object".

A field, by its type (a JSON null, an absent key, or a blank string in a non-string field is
missing: "missing required field" when the field is required):
- `long`: a JSON integer (no fraction, no exponent), or a string holding one (surrounding spaces
  allowed, an optional sign, ASCII digits, no `_`), within a Kafka LONG;
- `double`: a JSON number or a string holding a decimal number (`[+-]digits[.digits][e[+-]digits]`),
  and finite: NaN, infinities and numbers beyond the double range are "must be a finite number";
- `string`: a JSON string, as it is;
- `bool`: JSON true/false, or the string "true"/"false" (any case, surrounding spaces allowed);
- `time_ms`: epoch milliseconds as a `long`, or an ISO-8601 timestamp in the extended calendar form
  `YYYY-MM-DD[(T| )hh:mm[:ss[.f...]]][Z|(+|-)hh:mm]` (year 0001-9999, no leap second, naive means
  UTC); a fraction below the millisecond is truncated (towards the past).
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime
from typing import Any, Literal

from quotaplane.core.javamath import LONG_MAX, LONG_MIN

FieldType = Literal["long", "double", "string", "time_ms", "bool"]

# Line reasons.
NOT_UTF8 = "not UTF-8"
UNPARSABLE = "unparsable record"
NOT_OBJECT = "not a JSON object"
BOM = "\ufeff"

# Field reasons (after `field <name>=<value>: `).
MISSING = "missing required field"
EXPECTED = {
    "long": "must be a whole number within a LONG (no fraction, no exponent)",
    "double": "must be a number",
    "string": "must be a string",
    "bool": "must be true or false",
    "time_ms": "must be epoch milliseconds or an ISO-8601 timestamp",
}
NOT_FINITE = "must be a finite number"

# Text patterns, written once for both regex dialects: `{END}` is the very end of the text (Python's
# `\Z`, Java's `\z`: `$` would also match before a final newline), spaces are ` ` and tab only.
_PATTERNS = {
    "integer": r"^[ \t]*[+-]?[0-9]+[ \t]*{END}",
    "decimal": r"^[ \t]*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[ \t]*{END}",
    "non_finite": r"^[ \t]*[+-]?([nN][aA][nN]|[iI][nN][fF]([iI][nN][iI][tT][yY])?)[ \t]*{END}",
    "bool": r"^[ \t]*([tT][rR][uU][eE]|[fF][aA][lL][sS][eE])[ \t]*{END}",
    "iso": (r"^[ \t]*([0-9]{4})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
            r"(?:[T ]([01][0-9]|2[0-3]):([0-5][0-9])(?::([0-5][0-9])(?:\.([0-9]{1,9}))?)?)?"
            r"(Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])?[ \t]*{END}"),
}
JAVA = {name: p.replace("{END}", r"\z") for name, p in _PATTERNS.items()}
_RE = {name: re.compile(p.replace("{END}", r"\Z")) for name, p in _PATTERNS.items()}
_INTEGER, _DECIMAL, _NON_FINITE, _BOOL, _ISO = (_RE[n] for n in ("integer", "decimal", "non_finite", "bool",
                                                                 "iso"))
SPACES = " \t"  # what surrounds a value in a text field


def integer_text(text: str) -> bool:
    """An integer literal: optional sign, ASCII digits (no `_`, no fraction, no exponent)."""
    return _INTEGER.match(text) is not None


def decimal_text(text: str) -> bool:
    """A decimal number: `[+-]digits[.digits][e[+-]digits]` (no `_`, no hex, no NaN)."""
    return _DECIMAL.match(text) is not None


def non_finite_text(text: str) -> bool:
    """NaN or an infinity as Java or Python would write it."""
    return _NON_FINITE.match(text) is not None
JSON_SPACES = " \t\r\n"  # RFC 8259 whitespace


class FieldProblem(ValueError):
    """A value that breaks its field's rule: `reason` is the rule."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def parse_line(raw: bytes | str) -> tuple[dict[str, Any] | None, str | None]:
    """One JSON Lines line: `(object, None)`, or `(None, reason)`; `(None, None)` for a blank line."""
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None, NOT_UTF8
    else:
        text = raw
    if text.startswith(BOM):
        text = text[1:]
    if not text.strip(JSON_SPACES):
        return None, None
    try:
        value = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
    except (ValueError, RecursionError):
        return None, UNPARSABLE
    if not isinstance(value, dict):
        return None, NOT_OBJECT
    return value, None


def is_missing(kind: FieldType, value: Any) -> bool:
    return value is None or (kind != "string" and isinstance(value, str) and value.strip(SPACES) == "")


def _long(value: Any) -> int:
    if isinstance(value, bool):
        raise FieldProblem(EXPECTED["long"])
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and _INTEGER.match(value):
        number = int(value.strip(SPACES))
    else:
        raise FieldProblem(EXPECTED["long"])
    if not LONG_MIN <= number <= LONG_MAX:
        raise FieldProblem(EXPECTED["long"])
    return number


def _double(value: Any) -> float:
    if isinstance(value, bool):
        raise FieldProblem(EXPECTED["double"])
    if isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:
            raise FieldProblem(NOT_FINITE) from None
    elif isinstance(value, str) and _NON_FINITE.match(value):
        raise FieldProblem(NOT_FINITE)
    elif isinstance(value, str) and _DECIMAL.match(value):
        number = float(value.strip(SPACES))
    else:
        raise FieldProblem(EXPECTED["double"])
    if not math.isfinite(number):
        raise FieldProblem(NOT_FINITE)
    return number


def iso_millis(text: str) -> int | None:
    """Epoch milliseconds of an ISO-8601 timestamp of the accepted form (module docstring), or None."""
    m = _ISO.match(text)
    if m is None:
        return None
    year, month, day, hour, minute, second, fraction, zone = m.groups()
    try:
        moment = datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0),
                          int(second or 0), tzinfo=UTC)
    except ValueError:
        return None
    millis = (moment - datetime(1970, 1, 1, tzinfo=UTC)) // _MS + int(((fraction or "") + "000")[:3])
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        millis -= sign * (int(zone[1:3]) * 60 + int(zone[4:6])) * 60_000
    return millis


_MS = datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)


def _time_ms(value: Any) -> int:
    if isinstance(value, str) and not _INTEGER.match(value):
        millis = iso_millis(value)
        if millis is None:
            raise FieldProblem(EXPECTED["time_ms"])
        return millis
    try:
        return _long(value)
    except FieldProblem:
        raise FieldProblem(EXPECTED["time_ms"]) from None


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise FieldProblem(EXPECTED["string"])
    return value


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and _BOOL.match(value):
        return value.strip(SPACES).lower() == "true"
    raise FieldProblem(EXPECTED["bool"])


CONVERT = {"long": _long, "double": _double, "string": _string, "bool": _bool, "time_ms": _time_ms}


def convert(kind: FieldType, value: Any) -> Any:
    """The typed value of a present (non-missing) field; `FieldProblem` naming the rule."""
    return CONVERT[kind](value)
