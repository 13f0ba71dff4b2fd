"""The reference engine: every client request measured and judged one at a time, in event time.

spec: Kafka `ClientQuotaManager`, `ClientRequestQuotaManager`, `ControllerMutationQuotaManager`
(with `SampledStat`, `Rate`, `QuotaUtils`), kip-786-quota-value-metrics, and the storage callback's
produce limit.

Per broker and quota type, requests with the same metric tags share one sensor (see `resolution`).
A type is recorded only when some entity sets its quota (produce always, when the storage callback
is installed). For each request, in time order (input order for equal times):

- produce, fetch, request: record the value in the sampled rate, then measure it; the quota is
  violated when the rate is above the limit (equal is allowed); the throttle time is
  `Math.round((rate - limit) / limit * window)` cast to an int (the request quota caps it at one
  window first); a throttle that is not positive is no throttle. A throttled fetch has its bytes
  recorded back out (the broker returns an empty response).
- controller_mutation: the token bucket (strict: check, and record only when tokens >= 0;
  permissive: record, then check); violated when tokens < 0; throttle `Math.round(-tokens / limit
  * 1000)`. Its `mutation-rate` is a separate sampled rate with Kafka's default metric config.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field

from quotaplane.clients.engine.entities import ClientQuotaConfig
from quotaplane.clients.engine.quota_types import (
    CONTROLLER_MUTATION,
    FETCH,
    NANOS_TO_PERCENTAGE_PER_SECOND,
    PRODUCE,
    QUOTA_TYPES,
    QUOTA_VALUE_TYPES,
    REQUEST,
)
from quotaplane.clients.engine.resolution import QuotaResolver, Resolved, Tags
from quotaplane.clients.engine.sampled_rate import SampledRate
from quotaplane.clients.engine.settings import STRICT, ClientQuotaSettings
from quotaplane.clients.engine.storage_factor import FactorTimeline
from quotaplane.clients.engine.token_bucket import TokenBucket
from quotaplane.core.javamath import long_to_int, math_round, rate_throttle_ms, token_throttle_ms

CLIENT = "client"
STATIC = "static"


@dataclass(frozen=True)
class ClientRequest:
    """One request (see `quotaplane.clients.records.CLIENT_REQUESTS`)."""

    ts_ms: int
    broker_id: int
    user: str
    client_id: str
    quota_type: str
    value: float


@dataclass(frozen=True)
class RequestOutcome:
    """What the broker measured and decided for one request.

    `value_units` is what was recorded: bytes, whole nanoseconds of request time, or partition
    mutations. `rate` (None when the type is not recorded) is measured right after recording, before
    a throttled fetch is recorded back out; it is bytes/s, percent of one thread, or mutations/s.
    `violated`: the quota check failed; `throttled`: the throttle time is positive.
    `order` is the position in processing order.
    """

    ts_ms: int
    broker_id: int
    user: str
    client_id: str
    quota_type: str
    value: float
    value_units: int
    tag_user: str
    tag_client_id: str
    recorded: bool
    quota_limit: float | None
    quota_level: int | None
    quota_source: str | None
    throttle_factor: float | None
    rate: float | None
    window_ms: int | None
    tokens: float | None
    utilisation_pct: float | None
    violated: bool
    throttled: bool
    throttle_time_ms: int
    quota_value: float | None
    order: int

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def value_units(quota_type: str, value: float) -> int:
    """The whole units Kafka records: request time in ms becomes nanoseconds (rounded half up)."""
    if quota_type == REQUEST:
        return math_round(value * 1e6)
    if value != int(value):
        raise ValueError(f"{quota_type} value {value} must be a whole number")
    return int(value)


def utilisation(rate: float | None, limit: float | None) -> float | None:
    """rate / limit x 100 (None when unlimited, unmeasured, or the limit is 0)."""
    if rate is None or limit is None or limit == 0.0:
        return None
    return rate / limit * 100.0


def is_recorded(resolver: QuotaResolver, quota_type: str, settings: ClientQuotaSettings) -> bool:
    """Whether Kafka records a request of `quota_type`: some entity sets a quota of the type
    (`ClientQuotaManager.quotaTypesEnabled`), or it is produce and the storage callback is installed
    (the callback always supplies a produce quota)."""
    return resolver.enabled(quota_type) or (quota_type == PRODUCE and settings.storage_combined)


def records_every_type(configs: Iterable[ClientQuotaConfig], settings: ClientQuotaSettings) -> bool:
    """Whether every quota type of every configuration is recorded (`is_recorded`)."""
    return all(is_recorded(resolver, t, settings)
               for resolver in map(QuotaResolver, configs) for t in QUOTA_TYPES)


def effective_limit(resolved: Resolved, quota_type: str, settings: ClientQuotaSettings,
                    factor: float) -> tuple[float | None, str | None]:
    """The limit a request is checked against, and where its base came from.

    With the storage callback, produce: (client quota, else the static produce quota) x factor,
    at least 1.0; an unlimited base stays unlimited unless the factor is 0 (Strimzi:
    `max(Double.MAX_VALUE * 0, 1) = 1`). Everything else: the client quota as configured.
    """
    if quota_type == PRODUCE and settings.storage_combined:
        if resolved.limit is not None:
            return max(resolved.limit * factor, 1.0), CLIENT
        if settings.static_produce is not None:
            return max(settings.static_produce * factor, 1.0), STATIC
        return (1.0 if factor == 0.0 else None), STATIC
    return resolved.limit, (CLIENT if resolved.limit is not None else None)


# A sharing group: (broker_id, quota_type, tag user, tag client id).
GroupKey = tuple[int, str, str, str]


@dataclass
class Sensors:
    """What an engine has measured so far (it pickles, so a stream can carry it between runs): the
    sampled rate and token bucket of each sharing group, and how many requests were processed."""

    rates: dict[GroupKey, SampledRate] = field(default_factory=dict)
    buckets: dict[GroupKey, TokenBucket] = field(default_factory=dict)
    processed: int = 0


class ClientQuotaEngine:
    """Evaluates requests against a static quota configuration; `sensors` carries on from an earlier
    engine's measurements (a new set when not given)."""

    def __init__(self, config: ClientQuotaConfig, settings: ClientQuotaSettings | None = None,
                 factors: FactorTimeline | None = None, sensors: Sensors | None = None) -> None:
        self.settings = settings or ClientQuotaSettings()
        self.resolver = QuotaResolver(config)
        self.factors = factors
        self.sensors = sensors if sensors is not None else Sensors()
        self._resolved: dict[tuple[str, str, str], tuple[Tags, Resolved]] = {}
        self._rates = self.sensors.rates
        self._buckets = self.sensors.buckets

    def evaluate(self, requests: Sequence[ClientRequest]) -> list[RequestOutcome]:
        """Process `requests` in time order (stable); return the outcomes in input order."""
        outcomes: list[RequestOutcome | None] = [None] * len(requests)
        for index in sorted(range(len(requests)), key=lambda i: requests[i].ts_ms):
            outcomes[index] = self.process(requests[index])
        return [o for o in outcomes if o is not None]

    def recorded(self, quota_type: str) -> bool:
        return is_recorded(self.resolver, quota_type, self.settings)

    def process(self, r: ClientRequest) -> RequestOutcome:
        """One request; requests must come in time order."""
        s = self.settings
        cache_key = (r.quota_type, r.user, r.client_id)
        resolved_pair = self._resolved.get(cache_key)
        if resolved_pair is None:
            resolved_pair = self.resolver.resolve(r.quota_type, r.user, r.client_id)
            self._resolved[cache_key] = resolved_pair
        tags, resolved = resolved_pair
        factor = None
        if r.quota_type == PRODUCE and s.storage_combined:
            factor = self.factors.factor(r.broker_id, r.ts_ms) if self.factors else 1.0
        limit, source = effective_limit(resolved, r.quota_type, s, 1.0 if factor is None else factor)
        units = value_units(r.quota_type, r.value)
        recorded = self.recorded(r.quota_type)
        rate: float | None = None
        window: int | None = None
        tokens: float | None = None
        violated = False
        throttle = 0
        if recorded:
            key = (r.broker_id, r.quota_type, tags.user, tags.client_id)
            if r.quota_type == CONTROLLER_MUTATION:
                rate, window, tokens, violated, throttle = self._mutation(key, units, limit, r.ts_ms)
            else:
                rate, window, violated, throttle = self._sampled(key, r.quota_type, units, limit, r.ts_ms)
        self.sensors.processed += 1
        return RequestOutcome(
            ts_ms=r.ts_ms, broker_id=r.broker_id, user=r.user, client_id=r.client_id,
            quota_type=r.quota_type, value=r.value, value_units=units,
            tag_user=tags.user, tag_client_id=tags.client_id, recorded=recorded,
            quota_limit=limit, quota_level=resolved.level, quota_source=source,
            throttle_factor=factor, rate=rate, window_ms=window, tokens=tokens,
            utilisation_pct=utilisation(rate, limit), violated=violated, throttled=throttle > 0,
            throttle_time_ms=throttle,
            quota_value=limit if (s.quota_value_metric and recorded
                                  and r.quota_type in QUOTA_VALUE_TYPES) else None,
            order=self.sensors.processed - 1,
        )

    def _sampled(self, key: GroupKey, quota_type: str, units: int,
                 limit: float | None, t: int) -> tuple[float, int, bool, int]:
        s = self.settings
        state = self._rates.get(key)
        if state is None:
            state = self._rates[key] = SampledRate(s.window_num, s.window_ms)
        state.record(units, t)
        scale = NANOS_TO_PERCENTAGE_PER_SECOND if quota_type == REQUEST else 1.0
        rate, window = state.measure(t, scale)
        violated = limit is not None and rate > limit
        throttle = 0
        if violated:
            assert limit is not None
            raw = rate_throttle_ms(rate, limit, window)
            if quota_type == REQUEST:
                raw = min(raw, s.request_max_throttle_ms)
            throttle = max(long_to_int(raw), 0)
        if quota_type == FETCH and throttle > 0:
            state.record(-units, t)
        return rate, window, violated, throttle

    def _mutation(self, key: GroupKey, units: int, limit: float | None,
                  t: int) -> tuple[float, int, float | None, bool, int]:
        s = self.settings
        rate_state = self._rates.get(key)
        if rate_state is None:
            rate_state = self._rates[key] = SampledRate(s.metrics_num_samples, s.metrics_sample_window_ms)
        tokens: float | None = None
        violated = False
        throttle = 0
        if limit is None:
            rate_state.record(units, t)
        else:
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = self._buckets[key] = TokenBucket(s.controller_window_num, s.controller_window_ms)
            if s.controller_mutation_mode == STRICT:
                tokens = bucket.measure(limit, t)
                if tokens < 0:
                    violated = True
                else:
                    rate_state.record(units, t)
                    bucket.record(limit, float(units), t)
                    tokens = bucket.tokens
            else:
                rate_state.record(units, t)
                bucket.record(limit, float(units), t)
                tokens = bucket.measure(limit, t)
                violated = tokens < 0
            if violated:
                throttle = max(long_to_int(token_throttle_ms(tokens, limit)), 0)
        rate, window = rate_state.measure(t)
        return rate, window, tokens, violated, throttle
