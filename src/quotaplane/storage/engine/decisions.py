"""The outcome of one evaluation, and the effective client limits a throttle factor gives."""

from __future__ import annotations

from dataclasses import dataclass, field

from quotaplane.storage.config import StaticQuotas
from quotaplane.storage.engine.limits import Assessment

# Fallback reasons (stable short codes, usable as metric labels): a failed collection keeps the
# collector's reason as given (e.g. DESCRIBE_LOG_DIR_ERROR); this one is quotaplane's own.
MISSING_BROKER_DATA = "missing_broker_data"


@dataclass(frozen=True)
class Decision:
    """One evaluation (spec: Throttle Factor, Fallback Throttle Factor, Metrics).

    `throttling_*` name the volume giving the factor (None when the factor is 1.0 or is the fallback);
    for the local source the log dir is None (the broker's aggregate). `fallback_applied` is true
    when this evaluation increments the FallbackThrottleFactorApplied counter.
    """

    source: str
    throttle_factor: float
    throttling_broker_id: int | None = None
    throttling_log_dir: str | None = None
    fallback_reason: str | None = None
    fallback_applied: bool = False
    collection_error: str | None = None
    active_brokers: int = 0
    active_log_dirs: int = 0
    missing_brokers: tuple[int, ...] = ()
    observing_broker_id: int | None = None
    used_bytes: int | None = None
    assessments: tuple[Assessment, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class EffectiveLimits:
    """The limits a client gets; None is unlimited."""

    produce: float | None
    fetch: float | None
    request: float | None

    def as_dict(self) -> dict[str, float | None]:
        return {"produce": self.produce, "fetch": self.fetch, "request": self.request}


def effective_produce_limit(produce: float | None, factor: float) -> float | None:
    """`max(produce * factor, 1.0)` (shipped `StaticQuotaCallback.quotaLimit`).

    An unlimited quota stays unlimited for any factor above 0 and becomes 1.0 at 0 (the shipped
    `Double.MAX_VALUE * factor` is astronomically large for every factor a volume can produce).
    """
    if produce is None:
        return 1.0 if factor == 0.0 else None
    return max(produce * factor, 1.0)


def effective_limits(quotas: StaticQuotas, factor: float, principal: str | None = None,
                     excluded: frozenset[str] = frozenset()) -> EffectiveLimits:
    """Produce quota times the factor, never below 1.0; fetch and request untouched (but also never
    below 1.0); an excluded principal is unlimited (spec: Throttle Factor; shipped `quotaLimit`)."""
    if principal is not None and principal in excluded:
        return EffectiveLimits(None, None, None)

    def floor(value: float | None) -> float | None:
        return None if value is None else max(value, 1.0)

    return EffectiveLimits(effective_produce_limit(quotas.produce, factor), floor(quotas.fetch),
                           floor(quotas.request))
