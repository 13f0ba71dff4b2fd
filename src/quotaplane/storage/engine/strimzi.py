"""The strimzi dialect: the shipped plugin's throttle with validity expiry and its observation cache.

`StrimziThrottle` reproduces `PolicyBasedThrottle` + `CachingVolumeObserver` +
`PerVolumeThrottleFactorPolicy` of strimzi/kafka-quotas-plugin, with the clock injected
(epoch milliseconds):

- the per-volume limit is a circuit breaker: factor 0.0 if any volume breaches it, else 1.0;
- the initial factor is 1.0, valid from construction;
- a successful observation refreshes the cache and the factor (valid from now);
- a failed observation (or `check_validity`) switches to the fallback factor when the current
  factor is expired, strictly (`now > validFrom + validity`); the fallback never expires, so it is
  counted once per transition and stays until the next success;
- cache entries, keyed by (broker, log dir), are evicted when `now >= observedAt + validity`
  (inclusive), on every observation; a success evaluates the union of the cached entries, so a
  broker that left the active set still counts until its last observation is evicted;
- with storage checks disabled (interval <= 0 or no limit) the factor is always 1.0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from quotaplane.storage.config import StorageConfig
from quotaplane.storage.engine.decisions import Decision
from quotaplane.storage.engine.limits import Assessment, assess
from quotaplane.storage.engine.volume import Volume

# The reason recorded when the periodic validity check (not a failed observation) applies the fallback.
FACTOR_EXPIRED = "factor_expired"


class StrimziThrottle:
    """The throttle factor state of one observing broker; `clock()` returns epoch milliseconds."""

    def __init__(self, config: StorageConfig, clock: Callable[[], int]) -> None:
        assert config.dialect == "strimzi" and config.validity_ns is not None
        self.config = config
        self.clock = clock
        self.factor = 1.0
        self.valid_from = clock()
        self.in_fallback = False
        self.fallback_reason: str | None = None
        self.fallbacks: Counter[str] = Counter()
        self.cache: dict[tuple[int, str], tuple[Volume, int]] = {}
        self.throttling: Assessment | None = None
        self.assessments: tuple[Assessment, ...] = ()

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without its configuration (which may hold the admin client's credentials) and
        clock: whoever keeps a throttle pickled gives them back with `rebind`."""
        return {k: v for k, v in self.__dict__.items() if k not in ("config", "clock")}

    def rebind(self, config: StorageConfig, clock: Callable[[], int]) -> None:
        """The configuration and clock of an unpickled throttle."""
        self.config, self.clock = config, clock

    @property
    def enabled(self) -> bool:
        return self.config.checks_enabled

    def observe(self, volumes: Sequence[Volume], active: frozenset[int], error: str | None) -> Decision:
        """One collection round: a failure when `error` is given, else a success with the volumes of
        the active brokers. Returns the decision in force after it."""
        considered = [v for v in volumes if v.broker_id in active]
        applied = False
        if error is not None:
            applied = self.observe_failure(error)
        else:
            self.observe_success(considered)
        worst = self.throttling
        return Decision(
            source="strimzi", throttle_factor=self.factor,
            throttling_broker_id=worst.volume.broker_id if worst else None,
            throttling_log_dir=worst.volume.log_dir if worst else None,
            fallback_reason=self.fallback_reason if self.in_fallback else None,
            fallback_applied=applied, collection_error=error, active_brokers=len(active),
            active_log_dirs=len(considered),
            missing_brokers=tuple(sorted(active - {v.broker_id for v in considered})),
            assessments=self.assessments,
        )

    def observe_success(self, volumes: Iterable[Volume]) -> None:
        """Cache the observations, evict expired entries, evaluate the union (valid from now)."""
        if not self.enabled:
            return
        now = self.clock()
        for v in volumes:
            self.cache[v.key] = (v, now)
        self._evict(now)
        limit = self.config.hard
        assert limit is not None
        self.assessments = tuple(sorted((assess(v, limit, limit) for v, _ in self.cache.values()),
                                        key=lambda a: a.severity))
        worst = self.assessments[0] if self.assessments else None
        self.factor = worst.factor if worst is not None else 1.0
        self.throttling = worst if worst is not None and worst.factor < 1.0 else None
        self.valid_from = now
        self.in_fallback = False
        self.fallback_reason = None

    def observe_failure(self, reason: str) -> bool:
        """Evict expired cache entries; fall back if the factor has expired. True when the fallback
        was applied by this call (the counter incremented)."""
        if not self.enabled:
            return False
        now = self.clock()
        self._evict(now)
        return self._maybe_fallback(now, reason)

    def check_validity(self) -> bool:
        """The shipped periodic check (every 10 s live): fall back if the factor has expired."""
        if not self.enabled:
            return False
        return self._maybe_fallback(self.clock(), FACTOR_EXPIRED)

    def _maybe_fallback(self, now: int, reason: str) -> bool:
        if self.in_fallback or now - self.valid_from <= self.config.validity_expired_after_ms:
            return False
        self.in_fallback = True
        self.factor = self.config.fallback_factor
        self.fallback_reason = reason
        self.throttling = None
        self.fallbacks[reason] += 1
        return True

    def _evict(self, now: int) -> None:
        evict_from = self.config.validity_evicted_from_ms
        for key in [k for k, (_, seen) in self.cache.items() if now - seen >= evict_from]:
            del self.cache[key]
