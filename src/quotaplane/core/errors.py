"""Errors that name what was wrong: the property or field, the value, and the rule it broke."""

from __future__ import annotations


class QuotaplaneError(Exception):
    """Base class of every error quotaplane raises on purpose."""


class ConfigError(QuotaplaneError):
    """A configuration property is missing, malformed, out of range or conflicts with another.

    The message always has the form ``<property>=<value>: <rule>[ (<hint>)]`` so that one error
    per line can be printed and grepped.
    """

    def __init__(self, prop: str, value: object, rule: str, hint: str | None = None) -> None:
        self.prop = prop
        self.value = value
        self.rule = rule
        self.hint = hint
        text = f"{prop}={value!s}: {rule}"
        if hint:
            text += f" ({hint})"
        super().__init__(text)


class ConfigErrors(QuotaplaneError):
    """Several configuration errors found in one pass, reported together."""

    def __init__(self, errors: list[ConfigError]) -> None:
        self.errors = list(errors)
        super().__init__("\n".join(str(e) for e in self.errors))


class InputError(QuotaplaneError):
    """A record of input data breaks the schema or a rule.

    ``where`` locates the record (``file.jsonl:12`` or ``row 12``); ``field`` names the field.
    """

    def __init__(self, where: str, field: str, value: object, rule: str) -> None:
        self.where = where
        self.field = field
        self.value = value
        self.rule = rule
        super().__init__(f"{where}: field {field!r}={value!r}: {rule}")
