"""Declaring a telemetry record once: its fields, their types, and the rules a valid row keeps.

A `RecordSchema` is the single source for the JSON field list (the reference engine's JSON Lines
readers, docs), the validation rules that decide which rows are quarantined and why, and the Spark
`StructType` (built from it by `quotaplane.core.spark.schemas`). This module is plain Python: the
reference engines run without pyspark.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from quotaplane.core.errors import InputError
from quotaplane.core.fields import MISSING, FieldProblem, FieldType, convert, is_missing, iso_millis

if TYPE_CHECKING:  # only a type: a rule's Spark form is applied by the Spark reader
    from pyspark.sql import Column


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
            if is_missing(f.type, value):
                if f.required:
                    raise InputError(where, f.name, value, MISSING)
                out[f.name] = None
                continue
            try:
                out[f.name] = convert(f.type, value)
            except FieldProblem as problem:
                raise InputError(where, f.name, value, problem.reason) from None
        rule = self.broken_rule(out)
        if rule is not None:
            raise InputError(where, _first_field_of(rule, self), _rule_value(rule, out, self), rule.reason)
        return out

    def broken_rule(self, row: Mapping[str, Any]) -> Rule | None:
        """The first row rule a typed row breaks, or None."""
        return next((rule for rule in self.rules if rule.check(row)), None)


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


def parse_iso_millis(text: str) -> int | None:
    """Epoch milliseconds of an ISO-8601 timestamp of the accepted form, or None
    (`quotaplane.core.fields.iso_millis`)."""
    return iso_millis(text)
