"""Configuration files in JSON (client quotas, backlog policies): read strictly, errors named.

A file must be UTF-8 (a byte order mark at its start is ignored); a byte that is not names the line
("not UTF-8"). The keys of an object must be unique (Python's `json` would keep the last of two equal
keys without a word). NaN and Infinity literals are read as numbers, so that the rule of the value
they stand for names it ("must be a finite number").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from quotaplane.core.errors import ConfigError
from quotaplane.core.properties import read_config_bytes


class _Duplicate(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Duplicate(key)
        out[key] = value
    return out


def read_text(path: str | Path, what: str) -> str:
    """The text of a UTF-8 file; `ConfigError` naming the file (and the line of a byte that is not
    UTF-8)."""
    file = Path(path)
    data = read_config_bytes(file, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{file}:{line}", data[exc.start:exc.end].hex(), "not UTF-8") from None


def parse_json(text: str, where: str) -> Any:
    """Strict JSON (module docstring); `ConfigError` naming `where` and the problem."""
    try:
        return json.loads(text, object_pairs_hook=_unique)
    except _Duplicate as exc:
        raise ConfigError(where, exc.key, "duplicate key in a JSON object") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(where, "", f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
                          ) from None
    except RecursionError:
        raise ConfigError(where, "", "not valid JSON: nested too deeply") from None


def load_json(path: str | Path, what: str) -> Any:
    """The JSON document of a file (module docstring)."""
    return parse_json(read_text(path, what), str(path))
