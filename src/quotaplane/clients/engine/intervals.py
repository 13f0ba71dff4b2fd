"""Per-interval rows and per-client standing, from request outcomes.

One row per (broker, quota type, metric tags, interval) of recorded requests: the metric series a
broker exposes, summarised over `interval_ms`-long intervals aligned to the epoch
(`interval_start = ts - ts mod interval_ms`). "At the last request" values are those of the
interval's last request in processing order (`tokens`: controller mutations). Throttle time avg
is over throttled requests (Kafka's `throttle-time` Avg only records throttled requests), 0.0 when
none was throttled.

Standing (one row per broker, type and tags over the whole input): `over` when the highest
utilisation is above 100 %, `near` from 80 % to 100 %, `under` below 80 %, `unlimited` without a
limit (or with a limit of 0).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

from quotaplane.clients.engine.evaluate import RequestOutcome
from quotaplane.clients.engine.quota_types import QUOTA_VALUE_TYPES, REQUEST

NEAR_PCT = 80.0
OVER_PCT = 100.0


@dataclass(frozen=True)
class IntervalRow:
    broker_id: int
    quota_type: str
    user: str
    client_id: str
    interval_start_ms: int
    requests: int
    value_total: float
    violated_requests: int
    throttled_requests: int
    throttle_time_total_ms: int
    throttle_time_max_ms: int
    throttle_time_avg_ms: float
    rate: float
    rate_max: float
    quota_limit: float | None
    quota_limit_min: float | None
    utilisation_pct: float | None
    utilisation_max_pct: float | None
    throttle_factor_min: float | None
    tokens: float | None
    quota_value: float | None

    def as_dict(self, with_quota_value: bool = True) -> dict[str, object]:
        row = asdict(self)
        if not with_quota_value:
            del row["quota_value"]
        return row


@dataclass(frozen=True)
class StandingRow:
    broker_id: int
    quota_type: str
    user: str
    client_id: str
    requests: int
    violated_requests: int
    throttled_requests: int
    throttle_time_total_ms: int
    rate_max: float
    quota_limit_min: float | None
    utilisation_max_pct: float | None
    standing: str

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def interval_start(ts_ms: int, interval_ms: int) -> int:
    return ts_ms - ts_ms % interval_ms


def value_total(quota_type: str, units: int) -> float:
    """Summed units as the telemetry's unit: request time back in ms, the rest as is."""
    return float(units) / 1e6 if quota_type == REQUEST else float(units)


def _min(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return min(present) if present else None


def _max(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def aggregate_intervals(outcomes: Iterable[RequestOutcome], interval_ms: int,
                        quota_value_metric: bool = False) -> list[IntervalRow]:
    """The interval rows, sorted by broker, type, user, client id and interval."""
    groups: dict[tuple[int, str, str, str, int], list[RequestOutcome]] = {}
    for o in outcomes:
        if o.recorded:
            key = (o.broker_id, o.quota_type, o.tag_user, o.tag_client_id,
                   interval_start(o.ts_ms, interval_ms))
            groups.setdefault(key, []).append(o)
    rows = []
    for key in sorted(groups):
        members = sorted(groups[key], key=lambda o: o.order)
        last = members[-1]
        throttled = [o.throttle_time_ms for o in members if o.throttled]
        total_throttle = sum(throttled)
        rows.append(IntervalRow(
            broker_id=key[0], quota_type=key[1], user=key[2], client_id=key[3],
            interval_start_ms=key[4],
            requests=len(members),
            value_total=value_total(key[1], sum(o.value_units for o in members)),
            violated_requests=sum(1 for o in members if o.violated),
            throttled_requests=len(throttled),
            throttle_time_total_ms=total_throttle,
            throttle_time_max_ms=max((o.throttle_time_ms for o in members), default=0),
            throttle_time_avg_ms=float(total_throttle) / len(throttled) if throttled else 0.0,
            rate=float(last.rate),  # type: ignore[arg-type]
            rate_max=max(float(o.rate) for o in members),  # type: ignore[arg-type]
            quota_limit=last.quota_limit,
            quota_limit_min=_min(o.quota_limit for o in members),
            utilisation_pct=last.utilisation_pct,
            utilisation_max_pct=_max(o.utilisation_pct for o in members),
            throttle_factor_min=_min(o.throttle_factor for o in members),
            tokens=last.tokens,
            quota_value=(last.quota_limit if quota_value_metric and key[1] in QUOTA_VALUE_TYPES
                         else None),
        ))
    return rows


def standing_of(utilisation_max_pct: float | None) -> str:
    if utilisation_max_pct is None:
        return "unlimited"
    if utilisation_max_pct > OVER_PCT:
        return "over"
    if utilisation_max_pct >= NEAR_PCT:
        return "near"
    return "under"


def aggregate_standing(intervals: Iterable[IntervalRow]) -> list[StandingRow]:
    """One row per broker, type and tags, sorted like the intervals."""
    groups: dict[tuple[int, str, str, str], list[IntervalRow]] = {}
    for row in intervals:
        groups.setdefault((row.broker_id, row.quota_type, row.user, row.client_id), []).append(row)
    out = []
    for key in sorted(groups):
        members = groups[key]
        utilisation_max = _max(r.utilisation_max_pct for r in members)
        out.append(StandingRow(
            broker_id=key[0], quota_type=key[1], user=key[2], client_id=key[3],
            requests=sum(r.requests for r in members),
            violated_requests=sum(r.violated_requests for r in members),
            throttled_requests=sum(r.throttled_requests for r in members),
            throttle_time_total_ms=sum(r.throttle_time_total_ms for r in members),
            rate_max=max(r.rate_max for r in members),
            quota_limit_min=_min(r.quota_limit_min for r in members),
            utilisation_max_pct=utilisation_max,
            standing=standing_of(utilisation_max),
        ))
    return out
