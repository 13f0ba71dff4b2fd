"""`.properties` files read as Java reads them, and values typed as Kafka's ConfigDef types them."""

from __future__ import annotations

from pathlib import Path

import pytest

from quotaplane.core.errors import ConfigError
from quotaplane.core.javamath import LONG_MAX, LONG_MIN
from quotaplane.core.properties import double_value, load_properties, long_value


@pytest.mark.parametrize(("raw", "value"), [
    ("0", 0), (" 42 ", 42), ("+7", 7), ("-7", -7), (str(LONG_MAX), LONG_MAX), (str(LONG_MIN), LONG_MIN),
    ("9007199254740993", 9007199254740993),  # 2^53 + 1: never rounded through a double
])
def test_long_values(raw: str, value: int) -> None:
    assert long_value("k", raw) == value


@pytest.mark.parametrize(("raw", "rule"), [
    ("1_000", "not a number of type LONG"), ("1.0", "not a number of type LONG"),
    ("1e3", "not a number of type LONG"), ("", "not a number of type LONG"),
    ("0x10", "not a number of type LONG"),
    ("١٢", "not a number of type LONG"), (str(LONG_MAX + 1), "is out of the range of a LONG"),
    ("99999999999999999999999", "is out of the range of a LONG"), (str(LONG_MIN - 1), "is out of the range"),
])
def test_bad_long_values_are_errors_naming_the_rule(raw: str, rule: str) -> None:
    with pytest.raises(ConfigError, match=rule) as info:
        long_value("some.long", raw)
    assert str(info.value).startswith(f"some.long={raw}: ")


def test_a_long_out_of_its_own_range() -> None:
    with pytest.raises(ConfigError, match="must be from 1 to 2147483647"):
        long_value("quota.window.num", "0", 1, 2**31 - 1)


@pytest.mark.parametrize(("raw", "value"), [("0.5", 0.5), (" 1 ", 1.0), ("1e-3", 0.001), (".5", 0.5)])
def test_double_values(raw: str, value: float) -> None:
    assert double_value("k", raw) == value


@pytest.mark.parametrize(("raw", "rule"), [
    ("NaN", "must be a finite number"), ("Infinity", "must be a finite number"),
    ("-inf", "must be a finite number"), ("1e400", "must be a finite number"),
    ("1_0.5", "not a number of type DOUBLE"), ("0.5d", "not a number of type DOUBLE"),
])
def test_bad_double_values(raw: str, rule: str) -> None:
    with pytest.raises(ConfigError, match=rule):
        double_value("k", raw)


def test_files_are_iso_8859_1_with_unicode_escapes_or_utf8(tmp_path: Path) -> None:
    latin = tmp_path / "latin.properties"
    latin.write_bytes(b"a=caf\xe9\nb=\\u00e9t\\u00e9\n")
    assert load_properties(latin) == {"a": "café", "b": "été"}
    utf8 = tmp_path / "utf8.properties"
    utf8.write_bytes("\ufeffa=café\n".encode())
    assert load_properties(utf8) == {"a": "café"}  # the byte order mark is not part of the key


def test_a_malformed_escape_names_the_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.properties"
    bad.write_text("a=1\nb=\\u00zz\n")
    with pytest.raises(ConfigError, match=r"bad\.properties:2=b=\\u00zz: malformed \\uXXXX escape"):
        load_properties(bad)
