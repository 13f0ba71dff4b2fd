"""Value syntaxes of the storage configuration that Java defines: ISO-8601 durations, the excluded
principal list, and `String.split` (which the shipped plugin uses to parse that list)."""

from __future__ import annotations

import re

from quotaplane.core.javamath import LONG_MAX

NANOS_PER_SECOND = 1_000_000_000
NANOS_PER_MS = 1_000_000

# The grammar of java.time.Duration.parse: PnDTnHnMn.nS, each part optionally signed, case-insensitive,
# fraction (`.` or `,`, up to 9 digits) on seconds only.
_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?"
    r"(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
    re.IGNORECASE,
)


def parse_iso_duration_ns(text: str) -> int | None:
    """Nanoseconds of an ISO-8601 duration as `java.time.Duration.parse` reads it, or None if it does not.

    `PT5M` is 300 s; `PT-5M` and `-PT5M` parse (negative); `P1D` is 86400 s; `PT` and `P` do not parse;
    years, months and weeks are not accepted (as in Java).
    """
    m = _DURATION.fullmatch(text)
    if m is None:
        return None
    if m.group(3) is not None and m.group(3).upper() == "T":
        return None  # a `T` with no time part
    days, hours, minutes, seconds, fraction = m.group(2), m.group(4), m.group(5), m.group(6), m.group(7)
    if days is None and hours is None and minutes is None and seconds is None:
        return None
    total_seconds = sum(int(part or "0") * unit for part, unit in
                        ((days, 86400), (hours, 3600), (minutes, 60), (seconds, 1)))
    nanos = int((fraction or "").ljust(9, "0")) if fraction else 0
    if seconds is not None and seconds.startswith("-"):
        nanos = -nanos
    if abs(total_seconds) > LONG_MAX:
        return None  # Java raises ArithmeticException, reported as a parse failure
    total = total_seconds * NANOS_PER_SECOND + nanos
    return -total if m.group(1) == "-" else total


def format_duration_ns(nanos: int) -> str:
    """A duration in the units a person reads (`5m`, `90s`, `1.5s`, `-2m`)."""
    sign = "-" if nanos < 0 else ""
    n = abs(nanos)
    if n % NANOS_PER_SECOND:
        return f"{sign}{n / NANOS_PER_SECOND:g}s"
    seconds = n // NANOS_PER_SECOND
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds and seconds % size == 0:
            return f"{sign}{seconds // size}{unit}"
    return f"{sign}{seconds}s"


def java_split(text: str, separator: str) -> list[str]:
    """Java `String.split` with a literal separator: no match gives ``[text]``; trailing empties dropped."""
    if separator not in text:
        return [text]
    parts = text.split(separator)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def parse_excluded_principals(value: str) -> tuple[frozenset[str], list[str]]:
    """The excluded principal names, as the shipped plugin parses them; and the entries it rejects.

    The value (trimmed) is split on `;`; each entry must split on `User:` into exactly two parts and
    the second part is the name (so `User:foo;` gives {foo}, `fooUser:bar` gives {bar}, and an empty
    entry, `User:`, `user:foo` or `User:x User:y` are rejected).
    """
    names: set[str] = set()
    rejected: list[str] = []
    for entry in java_split(value.strip(), ";"):
        parts = java_split(entry, "User:")
        if len(parts) == 2:
            names.add(parts[1])
        else:
            rejected.append(entry)
    return frozenset(names), rejected
