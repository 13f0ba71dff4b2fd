"""Reading Java `.properties` files (comments, `=`/`:`/space separators, continuations, escapes).

Parsing is delegated to `jproperties`, which implements the full `java.util.Properties.load`
syntax; this module adds file handling, the encoding and the value types:

- a file is read as Java's `Properties.load(InputStream)` reads it, ISO-8859-1 with `\\uXXXX`
  escapes, except that a file that is valid UTF-8 is read as UTF-8 (what editors write today); a
  UTF-8 byte order mark at its start is ignored (Java would make it part of the first key); a
  malformed `\\u` escape is an error naming the line, as Java's `Malformed \\uxxxx encoding`;
- values are typed as Kafka's `ConfigDef.parseType` types them, trimmed: LONG is
  `Long.parseLong` (an optional sign and ASCII digits within the long range: no `_`, no fraction,
  never rounded through a double), DOUBLE a decimal number that must be finite, BOOLEAN true/false.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from pathlib import Path

from jproperties import ParseError, Properties

from quotaplane.core.errors import ConfigError
from quotaplane.core.fields import decimal_text, integer_text, non_finite_text
from quotaplane.core.javamath import LONG_MAX, LONG_MIN


def parse_properties(text: str, source: str = "<text>") -> dict[str, str]:
    """Parse `.properties` text into an ordered ``{key: value}`` dict (later keys win, as in Java)."""
    props = Properties()
    try:
        props.load(text.removeprefix("\ufeff").encode("utf-8"), "utf-8")
    except ParseError as exc:
        line = getattr(exc, "line_number", None)
        lines = text.splitlines()
        shown = lines[line - 1].strip() if line and 0 < line <= len(lines) else ""
        raise ConfigError(f"{source}:{line}" if line else source, shown,
                          "malformed \\uXXXX escape (four hexadecimal digits expected)") from None
    return {key: value for key, (value, _meta) in props.items()}


def read_config_bytes(path: str | Path, what: str) -> bytes:
    """The bytes of a configuration file without a leading UTF-8 byte order mark; `ConfigError`
    naming the file when it cannot be read."""
    file = Path(path)
    try:
        return file.read_bytes().removeprefix(b"\xef\xbb\xbf")
    except OSError as exc:
        raise ConfigError(str(file), "", f"cannot read the {what}: {exc.strerror}") from exc


def load_properties(path: str | Path) -> dict[str, str]:
    """Load a `.properties` file (module docstring: encoding, escapes)."""
    file = Path(path)
    data = read_config_bytes(file, "configuration file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("iso-8859-1")
    return parse_properties(text, str(file))


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


def long_value(key: str, raw: str, lo: int = LONG_MIN, hi: int = LONG_MAX) -> int:
    """A LONG (`Long.parseLong` of the trimmed text) within [lo, hi]; `ConfigError` otherwise."""
    text = raw.strip()
    if not integer_text(text):
        raise ConfigError(key, raw, "not a number of type LONG")
    value = int(text)
    if not LONG_MIN <= value <= LONG_MAX:
        raise ConfigError(key, raw, f"is out of the range of a LONG ({LONG_MIN}..{LONG_MAX})")
    if not lo <= value <= hi:
        raise ConfigError(key, raw, f"must be from {lo} to {hi}")
    return value


def double_value(key: str, raw: str) -> float:
    """A finite DOUBLE of the trimmed text; `ConfigError` otherwise."""
    text = raw.strip()
    if non_finite_text(text):
        raise ConfigError(key, raw, "must be a finite number")
    if not decimal_text(text):
        raise ConfigError(key, raw, "not a number of type DOUBLE")
    value = float(text)
    if not math.isfinite(value):
        raise ConfigError(key, raw, "must be a finite number")
    return value


def parse_long(props: Mapping[str, str], key: str, default: int | None) -> int | None:
    """A Kafka LONG property (`long_value`), or `default` when absent."""
    raw = props.get(key)
    return default if raw is None else long_value(key, raw)


def parse_double(props: Mapping[str, str], key: str, default: float | None) -> float | None:
    """A Kafka DOUBLE property (`double_value`), or `default` when absent."""
    raw = props.get(key)
    return default if raw is None else double_value(key, raw)
