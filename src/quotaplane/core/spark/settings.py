"""quotaplane's own settings of a Spark session (`spark.quotaplane.*`), read and checked."""

from __future__ import annotations

from typing import Any

from quotaplane.core.errors import ConfigError


def rows_setting(spark: Any, key: str, default: int, zero: str) -> int:
    """The session's setting `key` (`default` when unset), a count of rows: a whole number, 0 or
    more (`zero` says what 0 does, for the error's hint); else a `ConfigError` naming it."""
    value = spark.conf.get(key, str(default))
    try:
        rows = int(value)
    except ValueError:
        rows = -1
    if rows < 0:
        raise ConfigError(key, value, "must be a whole number of rows, 0 or more", zero)
    return rows
