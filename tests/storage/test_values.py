"""Java value syntaxes: ISO-8601 durations as `Duration.parse` reads them, and `String.split`."""

from __future__ import annotations

import pytest

from quotaplane.storage.values import format_duration_ns, java_split, parse_iso_duration_ns

S = 1_000_000_000


@pytest.mark.parametrize(("text", "nanos"), [
    ("PT5M", 300 * S), ("pt5m", 300 * S), ("PT-5M", -300 * S), ("-PT5M", -300 * S), ("-PT-5M", 300 * S),
    ("P1D", 86400 * S), ("P1DT1H", 90000 * S), ("PT0S", 0), ("PT1.5S", 1_500_000_000),
    ("PT1,5S", 1_500_000_000), ("PT-1.5S", -1_500_000_000), ("PT0.000000001S", 1), ("PT1.S", S),
    ("PT1H-30M", 1800 * S), ("+PT1S", S),
])
def test_durations_java_accepts(text: str, nanos: int) -> None:
    assert parse_iso_duration_ns(text) == nanos


@pytest.mark.parametrize("text", ["", "P", "PT", "5M", "PT5", "P1Y", "P1W", "PT1.0000000001S", "PT1.5M",
                                  " PT5M", "P1DT"])
def test_durations_java_rejects(text: str) -> None:
    assert parse_iso_duration_ns(text) is None


def test_durations_read_back() -> None:
    assert [format_duration_ns(n) for n in (300 * S, 90 * S, 1_500_000_000, -120 * S, 0)] == \
        ["5m", "90s", "1.5s", "-2m", "0s"]


@pytest.mark.parametrize(("text", "parts"), [
    ("a;b", ["a", "b"]), ("a;", ["a"]), ("", [""]), (";", []), ("a;;b", ["a", "", "b"]), (";a", ["", "a"]),
])
def test_java_split(text: str, parts: list[str]) -> None:
    assert java_split(text, ";") == parts
