"""Declaring a telemetry record once: its fields, their types, and the rules a valid row keeps.

A `RecordSchema` is the single source for the Spark `StructType` (readers, writers, tests),
the JSON field list (the reference engine's JSON Lines readers, docs) and the validation rules
that decide which rows are quarantined and why.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from quotaplane.core.errors import InputError

if TYPE_CHECKING:  # the Spark forms are built lazily: the reference engines run without pyspark
    from pyspark.sql import Column
    from pyspark.sql import types as T

FieldType = Literal["long", "double", "string", "time_ms", "bool"]


@dataclass(frozen=True)
class Field:
    """One field of a record.

    `time_ms` fields are epoch milliseconds; on input they may also be written as an ISO-8601
    timestamp (UTC unless the text carries an offset), which is converted to milliseconds.
    """

    name: str
    type: FieldType
    required: bool = True
    doc: str = ""

    @property
    def spark_type(self) -> T.DataType:
        from pyspark.sql import types as T

        return {"long": T.LongType(), "double": T.DoubleType(), "string": T.StringType(),
                "time_ms": T.LongType(), "bool": T.BooleanType()}[self.type]


@dataclass(frozen=True)
class Rule:
    """A row rule: `violated(cols)` is a Spark Column that is true when the row breaks the rule.

    `cols` maps a field name to its typed Column. `check` is the same rule on a Python dict
    (used by the reference engine's readers); it returns True when the row breaks the rule.
    """

    reason: str
    violated: Callable[[Mapping[str, Column]], Column]
    check: Callable[[Mapping[str, Any]], bool]


@dataclass(frozen=True)
class RecordSchema:
    """A named record type: fields and row rules."""

    name: str
    fields: tuple[Field, ...]
    rules: tuple[Rule, ...] = field(default=())
    doc: str = ""

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def spark_schema(self) -> T.StructType:
        """The typed schema of a used (valid) row."""
        from pyspark.sql import types as T

        return T.StructType([T.StructField(f.name, f.spark_type, not f.required) for f in self.fields])

    def raw_schema(self) -> T.StructType:
        """All fields as strings: how rows are read before they are checked, so nothing is lost."""
        from pyspark.sql import types as T

        return T.StructType([T.StructField(f.name, T.StringType(), True) for f in self.fields])

    def get(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    def coerce_record(self, record: Mapping[str, Any], where: str) -> dict[str, Any]:
        """Check and convert one JSON record for the reference engine; raise `InputError`.

        Applies the same type rules as the Spark reader and then the schema's row rules.
        Unknown keys are ignored, as the Spark reader ignores unknown columns.
        """
        out: dict[str, Any] = {}
        for f in self.fields:
            value = record.get(f.name)
            if value is None:
                if f.required:
                    raise InputError(where, f.name, None, "missing required field")
                out[f.name] = None
                continue
            out[f.name] = _coerce_value(f, value, where)
        for rule in self.rules:
            if rule.check(out):
                raise InputError(where, _first_field_of(rule, self), _rule_value(rule, out, self),
                                 rule.reason)
        return out


def _first_field_of(rule: Rule, schema: RecordSchema) -> str:
    """The first field (in schema order) the rule's reason names as a whole identifier, so that
    `ts_ms` is not taken for a mention of `oldest_unacked_publish_ts_ms`."""
    import re

    for f in schema.fields:
        if re.search(rf"(?<![A-Za-z0-9_]){re.escape(f.name)}(?![A-Za-z0-9_])", rule.reason):
            return f.name
    return schema.fields[0].name


def _rule_value(rule: Rule, row: Mapping[str, Any], schema: RecordSchema) -> Any:
    return row.get(_first_field_of(rule, schema))


def _coerce_value(f: Field, value: Any, where: str) -> Any:
    if f.type == "string":
        if isinstance(value, str):
            return value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InputError(where, f.name, value, "must be a string")
        return str(value)
    if f.type == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise InputError(where, f.name, value, "must be true or false")
    if f.type in ("long", "time_ms"):
        if isinstance(value, bool):
            raise InputError(where, f.name, value, "must be a whole number")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            text = value.strip()
            if _is_integer_text(text):
                return int(text)
            if f.type == "time_ms":
                millis = parse_iso_millis(text)
                if millis is not None:
                    return millis
                raise InputError(where, f.name, value,
                                 "must be epoch milliseconds or an ISO-8601 timestamp")
        raise InputError(where, f.name, value, "must be a whole number")
    # double
    if isinstance(value, bool):
        raise InputError(where, f.name, value, "must be a number")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            pass
    raise InputError(where, f.name, value, "must be a number")


def _is_integer_text(text: str) -> bool:
    body = text[1:] if text[:1] in "+-" else text
    return body.isdigit() and body.isascii()


def parse_iso_millis(text: str) -> int | None:
    """Epoch milliseconds of an ISO-8601 timestamp (naive means UTC), or None if unparsable."""
    from datetime import UTC, datetime

    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return round(parsed.timestamp() * 1000)
