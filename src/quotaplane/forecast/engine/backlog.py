"""Per Pulsar topic with a backlog quota: seconds until the size or the time quota is exceeded.

docs/forecast.md, "Backlogs" (eviction proximity). The input is the backlog-quota check of each
topic at each tick (`backlog_checks`, the backlog policy's own evaluation: backlog size, age of the
oldest unacknowledged message, the quotas in force). As of `at` (default: the last tick), for each
topic checked in `(at - window, at]`:

- size: the trend of the backlog size (`quotaplane.forecast.engine.trend`); exceeded now as
  Pulsar decides it (`size >= limit`, a negative limit is none: `isSizeBacklogExceeded`);
- time: the trend of the backlog age in seconds (an unknown age counts as 0); exceeded now when
  `age > limit` (a limit <= 0 is none: `checkTimeBacklogExceeded`);
- `seconds_to_quota` is the earlier of the two (size first on a tie, as Pulsar checks size first),
  `quota_type` says which; the band is the earlier of the two at the fastest and the slowest growth.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from quotaplane.forecast.config import ForecastSettings
from quotaplane.forecast.engine.timing import band, earliest, seconds_to
from quotaplane.forecast.engine.trend import Trend, trend


@dataclass(frozen=True, slots=True)
class BacklogTick:
    """One topic at one check tick (the columns of `backlog_checks` the forecast reads)."""

    ts_ms: int
    topic: str
    namespace: str
    backlog_size_bytes: int
    backlog_age_seconds: int | None
    size_limit: int
    time_limit: int


@dataclass(frozen=True)
class BacklogForecast:
    topic: str
    namespace: str
    at_ms: int
    observed_ts_ms: int
    backlog_size_bytes: int
    size_limit: int
    backlog_age_seconds: int | None  # at the last check, as observed: None when unknown
    time_limit: int
    size_growth_bytes_per_second: float | None
    age_growth_per_second: float | None
    seconds_to_size_quota: float | None
    seconds_to_time_quota: float | None
    seconds_to_quota: float | None
    quota_type: str | None
    low: float | None
    high: float | None

    def as_dict(self) -> dict[str, Any]:
        return {"kind": "backlog", **{k: getattr(self, k) for k in self.__dataclass_fields__}}


def _size_time(size: Trend, limit: int, growth: float | None, horizon: float) -> float | None:
    if limit < 0:
        return None
    return seconds_to(size.last >= limit, float(limit - size.last), growth, horizon)


def _age_time(age: Trend, limit: int, growth: float | None, horizon: float) -> float | None:
    if limit <= 0:
        return None
    return seconds_to(age.last > limit, float(limit - age.last), growth, horizon)


def forecast_backlogs(ticks: Iterable[BacklogTick], settings: ForecastSettings,
                      at_ms: int | None = None) -> list[BacklogForecast]:
    """Every topic's forecast where a size or time quota is in force, ordered by topic."""
    ticks = list(ticks)
    if not ticks:
        return []
    at = at_ms if at_ms is not None else max(t.ts_ms for t in ticks)
    by_topic: dict[str, dict[int, BacklogTick]] = {}
    for t in ticks:
        if at - settings.window_ms < t.ts_ms <= at:
            by_topic.setdefault(t.topic, {})[t.ts_ms] = t
    out = []
    horizon = settings.horizon_seconds
    for topic in sorted(by_topic):
        series = [by_topic[topic][ts] for ts in sorted(by_topic[topic])]
        last = series[-1]
        if last.size_limit < 0 and last.time_limit <= 0:
            continue
        size = trend([(t.ts_ms, t.backlog_size_bytes) for t in series])
        age = trend([(t.ts_ms, t.backlog_age_seconds or 0) for t in series])
        to_size = _size_time(size, last.size_limit, size.rate, horizon)
        to_time = _age_time(age, last.time_limit, age.rate, horizon)
        first = earliest(to_size, to_time)
        kind = None if first is None else ("size" if to_size == first else "time")
        size_slow, size_fast = band(size.rate, size.recent)
        age_slow, age_fast = band(age.rate, age.recent)
        low = earliest(_size_time(size, last.size_limit, size_fast, horizon),
                       _age_time(age, last.time_limit, age_fast, horizon))
        high = earliest(_size_time(size, last.size_limit, size_slow, horizon),
                        _age_time(age, last.time_limit, age_slow, horizon))
        out.append(BacklogForecast(
            topic=topic, namespace=last.namespace, at_ms=at, observed_ts_ms=last.ts_ms,
            backlog_size_bytes=last.backlog_size_bytes, size_limit=last.size_limit,
            backlog_age_seconds=last.backlog_age_seconds, time_limit=last.time_limit,
            size_growth_bytes_per_second=size.rate, age_growth_per_second=age.rate,
            seconds_to_size_quota=to_size, seconds_to_time_quota=to_time, seconds_to_quota=first,
            quota_type=kind, low=low, high=high))
    return out
