"""The strimzi dialect's throttle: circuit breaker, strict validity, fallback once, inclusive eviction."""

from __future__ import annotations

from quotaplane.storage.engine import FACTOR_EXPIRED, StrimziThrottle, Volume
from tests.storage.engine.helpers import strimzi_config

MIN = 60_000


class Clock:
    def __init__(self, now: int = 0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def throttle(**kw: str) -> tuple[StrimziThrottle, Clock]:
    clock = Clock()
    return StrimziThrottle(strimzi_config(**kw), clock), clock


def test_circuit_breaker_any_volume_at_the_limit_gives_zero() -> None:
    t, _ = throttle()
    t.observe_success([Volume(1, "/a", 1000, 101), Volume(2, "/a", 1000, 900)])
    assert t.factor == 1.0 and t.throttling is None
    t.observe_success([Volume(1, "/a", 1000, 100)])
    assert t.factor == 0.0 and t.throttling is not None and t.throttling.volume.key == (1, "/a")


def test_ratio_limit_and_zero_capacity_volume() -> None:
    t, _ = throttle(limit=("ratio", "0.1"))
    t.observe_success([Volume(1, "/a", 0, 0)])
    assert t.factor == 0.0


def test_empty_successful_observation_gives_one() -> None:
    t, _ = throttle()
    t.observe_success([])
    assert t.factor == 1.0


def test_proposal_timeline_validity_is_strict_and_fallback_counted_once() -> None:
    t, clock = throttle(validity="PT2M", fallback="0.0")
    t.observe_success([Volume(1, "/a", 1000, 900)])          # minute 0
    clock.now = 1 * MIN
    assert not t.observe_failure("DESCRIBE_CLUSTER_ERROR") and t.factor == 1.0
    clock.now = 2 * MIN                                        # exactly at validFrom + validity: not expired
    assert not t.observe_failure("DESCRIBE_CLUSTER_ERROR") and t.factor == 1.0
    clock.now = 2 * MIN + 1                                    # after it: fallback, counted
    assert t.observe_failure("SAFETY_TIMEOUT") and t.factor == 0.0
    assert t.fallback_reason == "SAFETY_TIMEOUT" and t.in_fallback
    clock.now = 3 * MIN                                        # the fallback never expires: not counted again
    assert not t.observe_failure("EXCEPTION") and t.factor == 0.0
    assert dict(t.fallbacks) == {"SAFETY_TIMEOUT": 1}
    clock.now = 4 * MIN
    t.observe_success([Volume(1, "/a", 1000, 900)])
    assert t.factor == 1.0 and not t.in_fallback and t.fallback_reason is None


def test_initial_factor_is_valid_from_construction() -> None:
    t, clock = throttle(validity="PT2M")
    clock.now = 2 * MIN
    assert not t.observe_failure("X")
    clock.now = 2 * MIN + 1
    assert t.observe_failure("X") and t.factor == 0.0


def test_periodic_check_falls_back_without_a_failure() -> None:
    t, clock = throttle(validity="PT1M", fallback="0.5")
    t.observe_success([])
    clock.now = MIN
    assert not t.check_validity()
    clock.now = MIN + 1
    assert t.check_validity() and t.factor == 0.5 and t.fallback_reason == FACTOR_EXPIRED


def test_cache_keeps_a_departed_broker_until_eviction_which_is_inclusive() -> None:
    t, clock = throttle(validity="PT2M")
    t.observe_success([Volume(1, "/a", 1000, 50), Volume(2, "/a", 1000, 900)])
    assert t.factor == 0.0
    clock.now = 2 * MIN - 1                                  # broker 1 left the active set: still cached
    t.observe_success([Volume(2, "/a", 1000, 900)])
    assert t.factor == 0.0 and t.throttling is not None and t.throttling.volume.broker_id == 1
    clock.now = 2 * MIN                                      # now >= observedAt + validity: evicted
    t.observe_success([Volume(2, "/a", 1000, 900)])
    assert t.factor == 1.0 and set(t.cache) == {(2, "/a")}


def test_failures_evict_but_do_not_cache() -> None:
    t, clock = throttle(validity="PT2M")
    t.observe_success([Volume(1, "/a", 1000, 900)])
    clock.now = 2 * MIN
    t.observe_failure("X")
    assert t.cache == {}


def test_new_observation_overwrites_the_cached_one() -> None:
    t, clock = throttle()
    t.observe_success([Volume(1, "/a", 1000, 50)])
    clock.now = 1000
    t.observe_success([Volume(1, "/a", 1000, 500)])
    assert t.factor == 1.0


def test_non_positive_validity_evicts_at_once_and_expires_at_once() -> None:
    t, clock = throttle(validity="PT0S")
    t.observe_success([Volume(1, "/a", 1000, 0)])
    assert t.factor == 1.0 and t.cache == {}     # evicted when made: the policy sees nothing
    assert not t.observe_failure("X")             # 0 ms later: not after validFrom + 0
    clock.now = 1
    assert t.observe_failure("X")


def test_disabled_checks_keep_factor_one_forever() -> None:
    for t, clock in (throttle(limit=None), throttle(interval="0")):
        t.observe_success([Volume(1, "/a", 1000, 0)])
        clock.now = 10**9
        assert not t.observe_failure("X") and t.factor == 1.0 and not t.check_validity()


def test_observe_counts_only_active_brokers() -> None:
    t, _ = throttle()
    d = t.observe([Volume(1, "/a", 1000, 0), Volume(2, "/a", 1000, 900)], frozenset({2, 3}), None)
    assert (d.throttle_factor, d.active_brokers, d.active_log_dirs, d.missing_brokers) == (1.0, 2, 1, (3,))
