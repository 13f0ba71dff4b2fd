"""The storage configuration checks that hold for both dialects and need none of its model.

Every problem is collected (`Collector`) so that `parse_storage_config` reports all of them at once.
The rules are in docs/storage-quotas.md (Configuration); the excluded principals are read as the
shipped plugin's `StaticQuotaConfig` reads them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from quotaplane.core.errors import ConfigError
from quotaplane.core.properties import closest_name
from quotaplane.storage import names as N
from quotaplane.storage.names import Dialect
from quotaplane.storage.values import parse_excluded_principals

T = TypeVar("T")


class Collector:
    """Collects errors and warnings so that every problem is reported in one pass."""

    def __init__(self) -> None:
        self.errors: list[ConfigError] = []
        self.warnings: list[str] = []

    def error(self, prop: str, value: object, rule: str, hint: str | None = None) -> None:
        self.errors.append(ConfigError(prop, value, rule, hint))

    def warn(self, prop: str, value: object, text: str) -> None:
        self.warnings.append(f"{prop}={value}: {text}")

    def parse(self, fn: Callable[[], T], default: T) -> T:
        try:
            return fn()
        except ConfigError as exc:
            self.errors.append(exc)
            return default


def read_dialect(props: Mapping[str, str], c: Collector) -> Dialect:
    """`quotaplane.config.dialect`: spec (the default) or strimzi."""
    raw = props.get(N.DIALECT_PROP)
    if raw is None:
        return "spec"
    value = raw.strip()
    if value not in N.DIALECTS:
        c.error(N.DIALECT_PROP, raw, "must be spec or strimzi",
                "spec: the proposal's property names (default); strimzi: the shipped plugin's names")
        return "spec"
    return value  # type: ignore[return-value]


def check_names(props: Mapping[str, str], dialect: Dialect, c: Collector) -> None:
    """Mixed dialects are an error; unknown callback names get a warning naming the closest known one."""
    known = (*N.known_names(dialect), N.DIALECT_PROP)
    for name, value in props.items():
        if not (name.startswith(N.CALLBACK_PREFIX) or name.startswith("quotaplane.")):
            continue
        owner = N.dialect_of(name)
        if owner is not None and owner != dialect:
            equivalent = N.EQUIVALENT.get(name)
            hint = f"set {N.DIALECT_PROP}={owner} and use only its names"
            if equivalent:
                hint += f", or use {equivalent} in the {dialect} dialect"
            c.error(name, value, f"belongs to the {owner} dialect but the dialect is {dialect}: "
                    "names of the two dialects cannot be mixed", hint)
            continue
        if name in known or name.startswith(N.admin_prefix(dialect)):
            continue
        guess = closest_name(name, known)
        text = f"unknown property of the {dialect} dialect, ignored"
        c.warn(name, value, text + (f" (did you mean {guess}?)" if guess else ""))


def read_excluded(props: Mapping[str, str], c: Collector) -> frozenset[str]:
    """`excluded.principal.name.list`: `User:<name>` entries separated by `;` (as shipped)."""
    raw = props.get(N.EXCLUDED_PRINCIPALS)
    if raw is None:
        return frozenset()
    names, rejected = parse_excluded_principals(raw)
    for entry in rejected:
        c.error(N.EXCLUDED_PRINCIPALS, raw, f'invalid entry "{entry}": missing User: prefix',
                "write User:<name> entries separated by ;, e.g. User:canary;User:cruise-control")
    return names


def in_range(c: Collector, prop: str, raw: str, value: float | None, low: float,
             high: float | None) -> bool:
    """Whether `value` (None: not set) lies in [low, high]; records the error when it does not."""
    if value is None:
        return True
    if value < low or (high is not None and value > high):
        rule = f"must be at least {low:g}" if high is None else \
            f"must be between {low:.1f} and {high:.1f} inclusive"
        c.error(prop, raw, rule)
        return False
    return True
