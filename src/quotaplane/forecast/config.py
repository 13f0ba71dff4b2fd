"""The forecast's settings (fit window, horizon, how many contributors are listed) and the run's
forecast configuration.

Durations are written as a number with a unit, `90s`, `30m`, `6h`, `7d` (or an ISO-8601
duration such as `PT6H`); see docs/forecast.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from quotaplane.core.errors import ConfigError
from quotaplane.storage.config import StorageConfig
from quotaplane.storage.values import NANOS_PER_MS, parse_iso_duration_ns

DEFAULT_WINDOW_MS = 6 * 3_600_000
DEFAULT_HORIZON_MS = 7 * 86_400_000
DEFAULT_LOOKBACK_MS = 86_400_000
TOP_CONTRIBUTORS = 5
_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION = re.compile(r"([0-9]+)(ms|s|m|h|d)")


@dataclass(frozen=True)
class ForecastSettings:
    """`window_ms`: observations in `(at - window, at]` are fitted; `lookback_ms`: replica sizes are
    read over `(at - history, at]` (`history_ms`: the longer of the two), where a drop shows the
    replica is at its retention limit and its troughs are fitted; `horizon_ms`: a limit crossed
    later than this is reported as not approached (null)."""

    window_ms: int = DEFAULT_WINDOW_MS
    horizon_ms: int = DEFAULT_HORIZON_MS
    top: int = TOP_CONTRIBUTORS
    lookback_ms: int = DEFAULT_LOOKBACK_MS

    @property
    def history_ms(self) -> int:
        """How far back replica sizes are read: the longer of the window and the lookback."""
        return max(self.window_ms, self.lookback_ms)

    @property
    def horizon_seconds(self) -> float:
        return self.horizon_ms / 1000.0


def parse_duration_ms(option: str, text: str) -> int:
    """Milliseconds of `90s`, `30m`, `6h`, `7d`, `250ms` or an ISO-8601 duration; must be > 0."""
    value = text.strip()
    match = _DURATION.fullmatch(value)
    if match is not None:
        ms = int(match.group(1)) * _UNITS_MS[match.group(2)]
    else:
        ns = parse_iso_duration_ns(value)
        if ns is None:
            raise ConfigError(option, text, "must be a duration such as 90s, 30m, 6h, 7d or PT6H")
        ms = ns // NANOS_PER_MS
    if ms <= 0:
        raise ConfigError(option, text, "must be longer than 0 ms")
    return ms


def settings_of(window: str | None, horizon: str | None, lookback: str | None = None,
                prefix: str = "--") -> ForecastSettings:
    """Settings from duration texts (None: the default), errors naming `<prefix>window` etc."""
    window_ms = parse_duration_ms(f"{prefix}window", window) if window else DEFAULT_WINDOW_MS
    horizon_ms = parse_duration_ms(f"{prefix}horizon", horizon) if horizon else DEFAULT_HORIZON_MS
    lookback_ms = parse_duration_ms(f"{prefix}lookback", lookback) if lookback else DEFAULT_LOOKBACK_MS
    return ForecastSettings(window_ms=window_ms, horizon_ms=horizon_ms, lookback_ms=lookback_ms)


@dataclass(frozen=True)
class ForecastConfig:
    """What `quotaplane run` forecasts: `settings` from `window` and `horizon` (the option texts, as
    given); the volumes with `storage` (the run's storage configuration), the backlogs with `backlog`
    (backlog policies were given)."""

    settings: ForecastSettings
    storage: StorageConfig | None
    backlog: bool
    window: str
    horizon: str
