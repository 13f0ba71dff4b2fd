"""The simulator's parameters: sizes, time span, request volume; validated with errors naming the option."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from quotaplane.core.errors import ConfigError, ConfigErrors
from quotaplane.core.records import parse_iso_millis
from quotaplane.sim.model import DAY_MS, HOUR_MS

DEFAULT_START = "2024-06-03T00:00:00Z"  # a Monday, UTC


@dataclass(frozen=True)
class SimParams:
    """What a run of the simulator is asked for (a scenario supplies its own defaults)."""

    seed: int = 1
    brokers: int = 6
    log_dirs: int = 2
    days: float = 1.0
    interval_seconds: int = 30
    clients: int = 40
    topics: int = 20
    pulsar_topics: int = 6
    start: str = DEFAULT_START
    requests_per_client_per_minute: float = 2.0
    max_request_bytes: int | None = None  # None: requests_per_client_per_minute bounds the rows
    window_start_hours: float | None = None  # None: the scenario's choice (most: the start)
    window_hours: float | None = None  # None: to the end of the span
    backlog_check_seconds: int = 60
    partition_interval_seconds: int = 300  # `partition_sizes` rounds: a multiple of interval_seconds

    @property
    def start_ms(self) -> int:
        millis = parse_iso_millis(self.start)
        assert millis is not None, self.start
        return millis

    @property
    def end_ms(self) -> int:
        return self.start_ms + round(self.days * DAY_MS)

    @property
    def interval_ms(self) -> int:
        return self.interval_seconds * 1000

    @property
    def window_ms(self) -> tuple[int, int]:
        """[start, end) of the request and backlog kinds, clipped to the span."""
        begin = self.start_ms + round((self.window_start_hours or 0.0) * HOUR_MS)
        end = self.end_ms if self.window_hours is None else begin + round(self.window_hours * HOUR_MS)
        return begin, min(end, self.end_ms)

    def with_overrides(self, overrides: dict[str, Any]) -> SimParams:
        """These parameters with the given ones replaced (None values are ignored)."""
        known = {f.name for f in fields(self)}
        given = {k: v for k, v in overrides.items() if v is not None}
        unknown = sorted(set(given) - known)
        if unknown:
            raise ConfigError(unknown[0], given[unknown[0]], "is not a simulator parameter")
        return replace(self, **given)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def option(name: str) -> str:
    return "--" + name.replace("_", "-")


def validate(p: SimParams, min_brokers: int = 1) -> None:
    """Raise `ConfigErrors` listing every parameter out of range."""
    errors: list[ConfigError] = []

    def need(ok: bool, name: str, rule: str) -> None:
        if not ok:
            errors.append(ConfigError(option(name), getattr(p, name), rule))

    need(0 <= p.seed < 2**31, "seed", "must be in 0..2147483647")
    need(min_brokers <= p.brokers <= 10_000, "brokers", f"must be in {min_brokers}..10000 for this scenario")
    need(1 <= p.log_dirs <= 64, "log_dirs", "must be in 1..64")
    need(0 < p.days <= 3660, "days", "must be more than 0 and at most 3660")
    need(1 <= p.interval_seconds <= 86_400, "interval_seconds", "must be in 1..86400")
    need(3 <= p.clients <= 1_000_000, "clients", "must be in 3..1000000 (producers, consumers and an admin)")
    need(1 <= p.topics <= 100_000, "topics", "must be in 1..100000")
    need(0 <= p.pulsar_topics <= 100_000, "pulsar_topics", "must be in 0..100000")
    need(parse_iso_millis(p.start) is not None, "start", "must be an ISO-8601 timestamp")
    need(1 <= p.requests_per_client_per_minute <= 600, "requests_per_client_per_minute", "must be in 1..600")
    need(p.max_request_bytes is None or p.max_request_bytes >= 1024, "max_request_bytes",
         "must be at least 1024")
    need(1 <= p.backlog_check_seconds <= 86_400, "backlog_check_seconds", "must be in 1..86400")
    need(1 <= p.partition_interval_seconds <= 86_400 * 366, "partition_interval_seconds",
         "must be in 1..31622400")
    need(p.window_start_hours is None or p.window_start_hours >= 0, "window_start_hours",
         "must not be negative")
    need(p.window_hours is None or p.window_hours > 0, "window_hours", "must be more than 0")
    if not errors:
        need(p.days * DAY_MS >= p.interval_ms, "days", "must span at least one collection interval")
        need(p.partition_interval_seconds % p.interval_seconds == 0, "partition_interval_seconds",
             f"must be a multiple of --interval-seconds ({p.interval_seconds})")
        begin, end = p.window_ms
        need(begin < end, "window_start_hours", f"must start the window before the end ({p.days} days)")
    if errors:
        raise ConfigErrors(errors)
