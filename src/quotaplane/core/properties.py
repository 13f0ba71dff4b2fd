"""Reading Java `.properties` files (comments, `=`/`:`/space separators, continuations, escapes).

Parsing is delegated to `jproperties`, which implements the full `java.util.Properties.load`
syntax; this module only adds file handling and the project's error type.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from pathlib import Path

from jproperties import Properties

from quotaplane.core.errors import ConfigError


def parse_properties(text: str) -> dict[str, str]:
    """Parse `.properties` text into an ordered ``{key: value}`` dict (later keys win, as in Java)."""
    props = Properties()
    props.load(text.encode("utf-8"), "utf-8")
    return {key: value for key, (value, _meta) in props.items()}


def load_properties(path: str | Path) -> dict[str, str]:
    """Load a `.properties` file (UTF-8; `\\uXXXX` escapes are decoded as in Java)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(str(file), "", f"cannot read the configuration file: {exc.strerror}") from exc
    return parse_properties(text)


def closest_name(name: str, known: Iterable[str]) -> str | None:
    """The known property name most similar to ``name`` (for 'did you mean' warnings)."""
    matches = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return matches[0] if matches else None


def parse_bool(props: Mapping[str, str], key: str, default: bool) -> bool:
    """A Kafka BOOLEAN property: `true`/`false`, case-insensitive, whitespace trimmed."""
    raw = props.get(key)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in ("true", "false"):
        return value == "true"
    raise ConfigError(key, raw, "must be true or false")


def parse_long(props: Mapping[str, str], key: str, default: int | None) -> int | None:
    """A Kafka LONG property: a whole number, whitespace trimmed."""
    raw = props.get(key)
    if raw is None:
        return default
    try:
        return int(raw.strip())
    except ValueError:
        raise ConfigError(key, raw, "not a number of type LONG") from None


def parse_double(props: Mapping[str, str], key: str, default: float | None) -> float | None:
    """A Kafka DOUBLE property: a finite decimal number, whitespace trimmed."""
    raw = props.get(key)
    if raw is None:
        return default
    try:
        value = float(raw.strip())
    except ValueError:
        raise ConfigError(key, raw, "not a number of type DOUBLE") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise ConfigError(key, raw, "must be a finite number")
    return value
