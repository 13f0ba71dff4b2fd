"""The reference engine: recording, checking, throttling and the storage combination."""

from __future__ import annotations

import pytest

from quotaplane.clients.engine.entities import DEFAULT, ClientQuotaConfig, QuotaEntity
from quotaplane.clients.engine.evaluate import (
    ClientQuotaEngine,
    ClientRequest,
    is_recorded,
    records_every_type,
    value_units,
)
from quotaplane.clients.engine.resolution import QuotaResolver
from quotaplane.clients.engine.settings import PERMISSIVE, ClientQuotaSettings
from quotaplane.clients.engine.storage_factor import FactorTimeline, StorageDecision

T0 = 1_767_225_600_000


def config(**keys: float) -> ClientQuotaConfig:
    return ClientQuotaConfig({QuotaEntity(DEFAULT, None): dict(keys)})


def req(t: int, quota_type: str, value: float, user: str = "alice", client: str = "app",
        broker: int = 1) -> ClientRequest:
    return ClientRequest(T0 + t, broker, user, client, quota_type, value)


def test_the_kafka_test_vector_throttles_2100_ms() -> None:
    engine = ClientQuotaEngine(config(producer_byte_rate=500))
    out = engine.evaluate([*(req(1000 * i, "produce", 400) for i in range(10)), req(9500, "produce", 2300)])
    assert [o.throttle_time_ms for o in out[:10]] == [0] * 10
    last = out[-1]
    assert (last.rate, last.window_ms, last.throttle_time_ms) == (600.0, 10_500, 2100)
    assert last.quota_limit == 500.0
    assert last.violated and last.throttled and last.utilisation_pct == 120.0


def test_a_rate_equal_to_the_quota_is_not_a_violation() -> None:
    # 10 000 bytes over the padded 10 s window = exactly 1000 B/s
    out = ClientQuotaEngine(config(producer_byte_rate=1000)).evaluate([req(0, "produce", 10_000)])
    assert out[0].rate == 1000.0 and not out[0].violated and out[0].throttle_time_ms == 0
    out = ClientQuotaEngine(config(producer_byte_rate=1000)).evaluate([req(0, "produce", 10_001)])
    assert out[0].violated and out[0].throttle_time_ms == 1  # 0.1 / 1000 * 10000 = 1


def test_a_violation_that_rounds_to_zero_is_not_a_throttle() -> None:
    out = ClientQuotaEngine(config(producer_byte_rate=1000)).evaluate([req(0, "produce", 10_000.0 + 0.0)])
    assert not out[0].violated
    out = ClientQuotaEngine(config(producer_byte_rate=100_000)).evaluate([req(0, "produce", 1_000_004)])
    assert out[0].violated and out[0].throttle_time_ms == 0 and not out[0].throttled  # 0.4 ms


def test_produce_bytes_stay_recorded_when_throttled() -> None:
    engine = ClientQuotaEngine(config(producer_byte_rate=100))
    out = engine.evaluate([req(0, "produce", 2000), req(1, "produce", 1)])
    assert out[0].throttled and out[1].rate == 2001 / 10.001


def test_a_throttled_fetch_is_recorded_back_out() -> None:
    engine = ClientQuotaEngine(config(consumer_byte_rate=100))
    out = engine.evaluate([req(0, "fetch", 2000), req(1, "fetch", 1)])
    assert out[0].throttled and out[0].rate == 200.0
    assert out[1].rate == 1 / 10.001 and not out[1].throttled


def test_request_throttle_is_capped_at_one_window() -> None:
    engine = ClientQuotaEngine(config(request_percentage=1.0), ClientQuotaSettings(window_size_seconds=2))
    out = engine.evaluate([req(0, "request", 5000.0)])  # 5 s of thread time: 500 %-s over 20 s = 25 %
    assert out[0].rate == pytest.approx(25.0) and out[0].throttle_time_ms == 2000
    assert out[0].value_units == 5_000_000_000


def test_request_time_is_recorded_in_whole_nanoseconds() -> None:
    assert value_units("request", 0.0000015) == 2  # 1.5 ns rounds half up
    assert value_units("request", 2.5) == 2_500_000
    assert value_units("produce", 7.0) == 7
    with pytest.raises(ValueError, match="whole number"):
        value_units("fetch", 1.5)


def test_unconfigured_types_are_not_recorded() -> None:
    out = ClientQuotaEngine(config(producer_byte_rate=10)).evaluate([req(0, "fetch", 10**9)])
    o = out[0]
    assert not o.recorded and o.rate is None and o.throttle_time_ms == 0 and o.quota_limit is None


def test_a_type_is_recorded_when_some_entity_sets_it_or_it_is_produce_with_the_callback() -> None:
    resolver = QuotaResolver(config(producer_byte_rate=10))
    plain, combined = ClientQuotaSettings(), ClientQuotaSettings(storage_combined=True)
    assert is_recorded(resolver, "produce", plain) and not is_recorded(resolver, "fetch", plain)
    empty = QuotaResolver(ClientQuotaConfig({}))
    assert not is_recorded(empty, "produce", plain) and is_recorded(empty, "produce", combined)
    assert not is_recorded(empty, "fetch", combined)
    every = config(producer_byte_rate=1, consumer_byte_rate=1, request_percentage=1,
                   controller_mutation_rate=1)
    assert records_every_type([every], plain)
    assert not records_every_type([every, config(producer_byte_rate=1)], plain)
    assert records_every_type([], plain)


def test_unlimited_groups_are_still_measured_when_the_type_is_enabled() -> None:
    engine = ClientQuotaEngine(ClientQuotaConfig({QuotaEntity("bob", None): {"producer_byte_rate": 1.0}}))
    o = engine.evaluate([req(0, "produce", 5000)])[0]
    assert o.recorded and o.quota_limit is None and o.rate == 500.0 and not o.violated
    assert o.utilisation_pct is None


def test_sharing_groups_share_one_rate() -> None:
    engine = ClientQuotaEngine(config(producer_byte_rate=1000))  # user-level: clients of alice share
    out = engine.evaluate([req(0, "produce", 6000, client="a"), req(0, "produce", 6000, client="b"),
                           req(0, "produce", 6000, user="bob")])
    assert [o.rate for o in out] == [600.0, 1200.0, 600.0]
    assert [o.throttled for o in out] == [False, True, False]


def test_brokers_measure_separately() -> None:
    engine = ClientQuotaEngine(config(producer_byte_rate=1000))
    out = engine.evaluate([req(0, "produce", 8000, broker=1), req(0, "produce", 8000, broker=2)])
    assert [o.rate for o in out] == [800.0, 800.0]


def test_requests_are_taken_in_time_order_and_returned_in_input_order() -> None:
    engine = ClientQuotaEngine(config(producer_byte_rate=1000))
    out = engine.evaluate([req(5, "produce", 1), req(0, "produce", 12_000), req(5, "produce", 2)])
    assert [o.ts_ms - T0 for o in out] == [5, 0, 5]
    assert [o.order for o in out] == [1, 0, 2]
    assert out[0].rate == 12_001 / 10.005 and out[2].rate == 12_003 / 10.005


def test_int_overflow_of_a_huge_throttle_means_no_throttle() -> None:
    """(rate - q) / q * window above 2^31 ms wraps in Kafka's (int) cast."""
    engine = ClientQuotaEngine(config(producer_byte_rate=1))
    out = engine.evaluate([req(0, "produce", 5_000_000)])  # 499 999 x 10 000 ms: 4 999 990 000 -> wraps
    assert out[0].violated
    assert out[0].throttle_time_ms == 4_999_990_000 - 2**32
    out = ClientQuotaEngine(config(producer_byte_rate=1)).evaluate([req(0, "produce", 2_000_000)])
    assert out[0].throttle_time_ms == 1_999_990_000  # still below 2^31
    out = ClientQuotaEngine(config(producer_byte_rate=1)).evaluate([req(0, "produce", 3_000_000)])
    assert out[0].throttle_time_ms == 0 and not out[0].throttled  # 2 999 990 000 wraps negative
    # and a zero quota: infinity -> Long.MAX_VALUE -> -1: never throttled
    out = ClientQuotaEngine(config(producer_byte_rate=0)).evaluate([req(0, "produce", 1)])
    assert out[0].violated and out[0].throttle_time_ms == 0 and out[0].utilisation_pct is None


def test_controller_mutation_strict_rejects_without_recording() -> None:
    s = ClientQuotaSettings(controller_window_num=2)
    engine = ClientQuotaEngine(config(controller_mutation_rate=5), s)  # burst 10
    out = engine.evaluate([req(0, "controller_mutation", 12), req(100, "controller_mutation", 1),
                           req(500, "controller_mutation", 1)])
    assert (out[0].tokens, out[0].violated, out[0].throttle_time_ms) == (-2.0, False, 0)
    assert out[1].violated and out[1].tokens == pytest.approx(-1.5) and out[1].throttle_time_ms == 300
    # +2 tokens by 500 ms: 0.5 >= 0, so it is recorded (and leaves -0.5)
    assert out[2].violated is False and out[2].tokens == pytest.approx(-0.5)
    # the rejected request was not recorded in the mutation rate (2 x 30 s metric windows)
    assert out[2].rate == 13 / 30.5 and out[2].window_ms == 30_500


def test_controller_mutation_permissive_records_then_checks() -> None:
    s = ClientQuotaSettings(controller_window_num=2, controller_mutation_mode=PERMISSIVE)
    out = ClientQuotaEngine(config(controller_mutation_rate=5), s).evaluate(
        [req(0, "controller_mutation", 12), req(100, "controller_mutation", 1)])
    assert out[0].violated and out[0].throttle_time_ms == 400
    assert out[1].violated and out[1].tokens == pytest.approx(-2.5) and out[1].throttle_time_ms == 500


def test_storage_factor_scales_the_produce_quota_only() -> None:
    factors = FactorTimeline([StorageDecision(T0 + 1000, 0.5), StorageDecision(T0 + 2000, 0.0)])
    s = ClientQuotaSettings(storage_combined=True)
    engine = ClientQuotaEngine(config(producer_byte_rate=1000, consumer_byte_rate=1000), s, factors)
    out = engine.evaluate([req(999, "produce", 1), req(1000, "produce", 1), req(2000, "produce", 1),
                           req(2000, "fetch", 1)])
    assert [o.quota_limit for o in out] == [1000.0, 500.0, 1.0, 1000.0]
    assert [o.throttle_factor for o in out] == [1.0, 0.5, 0.0, None]


def test_static_produce_quota_applies_without_a_client_quota() -> None:
    s = ClientQuotaSettings(storage_combined=True, static_produce=800.0)
    factors = FactorTimeline([StorageDecision(T0, 0.25)])
    engine = ClientQuotaEngine(ClientQuotaConfig({QuotaEntity("bob", None): {"producer_byte_rate": 9.0}}),
                               s, factors)
    out = engine.evaluate([req(0, "produce", 1), req(0, "produce", 1, user="bob")])
    assert (out[0].quota_limit, out[0].quota_source) == (200.0, "static")
    assert (out[1].quota_limit, out[1].quota_source) == (2.25, "client")


def test_storage_limits_never_go_below_one_byte_per_second() -> None:
    s = ClientQuotaSettings(storage_combined=True)
    factors = FactorTimeline([StorageDecision(T0, 0.001)])
    engine = ClientQuotaEngine(config(producer_byte_rate=500), s, factors)
    assert engine.evaluate([req(0, "produce", 1)])[0].quota_limit == 1.0


def test_unlimited_produce_stays_unlimited_unless_the_factor_is_zero() -> None:
    s = ClientQuotaSettings(storage_combined=True)
    engine = ClientQuotaEngine(ClientQuotaConfig({}), s,
                               FactorTimeline([StorageDecision(T0, 0.5), StorageDecision(T0 + 10, 0.0)]))
    out = engine.evaluate([req(0, "produce", 1), req(10, "produce", 1)])
    assert out[0].recorded and out[0].quota_limit is None  # produce recorded with the storage callback
    assert out[1].quota_limit == 1.0 and out[1].tag_client_id == "app"


def test_without_the_storage_callback_small_quotas_are_not_floored() -> None:
    out = ClientQuotaEngine(config(producer_byte_rate=0.5)).evaluate([req(0, "produce", 1)])
    assert out[0].quota_limit == 0.5 and out[0].throttle_factor is None


def test_quota_value_only_when_enabled_and_only_for_kip_786_types() -> None:
    cfg = config(producer_byte_rate=5, controller_mutation_rate=5)
    on = ClientQuotaEngine(cfg, ClientQuotaSettings(quota_value_metric=True)).evaluate(
        [req(0, "produce", 1), req(0, "controller_mutation", 1)])
    assert [o.quota_value for o in on] == [5.0, None]
    off = ClientQuotaEngine(cfg).evaluate([req(0, "produce", 1)])
    assert off[0].quota_value is None
