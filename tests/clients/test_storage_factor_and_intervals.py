"""The storage factor in force, and the per-interval and standing aggregation."""

from __future__ import annotations

from quotaplane.clients.engine.entities import DEFAULT, ClientQuotaConfig, QuotaEntity
from quotaplane.clients.engine.evaluate import ClientQuotaEngine, ClientRequest
from quotaplane.clients.engine.intervals import (
    aggregate_intervals,
    aggregate_standing,
    interval_start,
    standing_of,
)
from quotaplane.clients.engine.settings import ClientQuotaSettings
from quotaplane.clients.engine.storage_factor import FactorTimeline, StorageDecision


def test_factor_before_the_first_decision_is_one() -> None:
    assert FactorTimeline([StorageDecision(100, 0.5)]).factor(1, 99) == 1.0
    assert FactorTimeline([]).factor(1, 10**15) == 1.0


def test_factor_at_the_decision_time_is_in_force() -> None:
    timeline = FactorTimeline([StorageDecision(100, 0.5), StorageDecision(200, 0.75)])
    assert [timeline.factor(1, t) for t in (100, 199, 200, 10**9)] == [0.5, 0.5, 0.75, 0.75]


def test_cluster_decisions_apply_to_every_broker_local_ones_to_theirs() -> None:
    timeline = FactorTimeline([StorageDecision(100, 0.5, None), StorageDecision(200, 0.1, 2)])
    assert timeline.factor(1, 300) == 0.5
    assert timeline.factor(2, 300) == 0.1


def test_ties_prefer_the_broker_decision_then_the_smallest_factor() -> None:
    timeline = FactorTimeline([StorageDecision(100, 0.1, 1), StorageDecision(100, 0.9, None),
                               StorageDecision(100, 0.3, 1)])
    assert timeline.factor(1, 100) == 0.1
    assert timeline.factor(2, 100) == 0.9


def test_interval_start_is_aligned_to_the_epoch() -> None:
    assert interval_start(119_999, 60_000) == 60_000
    assert interval_start(120_000, 60_000) == 120_000
    assert interval_start(-1, 60_000) == -60_000


def test_standing_boundaries() -> None:
    assert [standing_of(u) for u in (None, 79.999, 80.0, 100.0, 100.0001)] == [
        "unlimited", "under", "near", "near", "over"]


def test_intervals_and_standing() -> None:
    config = ClientQuotaConfig({QuotaEntity(DEFAULT, None): {"producer_byte_rate": 1000.0}})
    engine = ClientQuotaEngine(config, ClientQuotaSettings(quota_value_metric=True))
    requests = [ClientRequest(t, 1, "alice", "a", "produce", v)
                for t, v in ((0, 5000), (500, 8000), (59_999, 100), (60_000, 1), (130_000, 0))]
    requests.append(ClientRequest(0, 1, "alice", "a", "fetch", 10))  # not recorded: no fetch quota
    outcomes = engine.evaluate(requests)
    rows = aggregate_intervals(outcomes, 60_000, quota_value_metric=True)
    assert [(r.interval_start_ms, r.requests) for r in rows] == [(0, 3), (60_000, 1), (120_000, 1)]
    first = rows[0]
    assert first.value_total == 13_100.0
    assert (first.violated_requests, first.throttled_requests) == (1, 1)
    throttle = outcomes[1].throttle_time_ms
    assert throttle > 0
    assert (first.throttle_time_total_ms, first.throttle_time_max_ms, first.throttle_time_avg_ms) == (
        throttle, throttle, float(throttle))
    assert first.rate == outcomes[2].rate and first.rate_max == outcomes[1].rate
    assert first.quota_value == 1000.0 and first.utilisation_max_pct == outcomes[1].utilisation_pct
    assert rows[1].throttle_time_avg_ms == 0.0
    assert "quota_value" not in rows[0].as_dict(with_quota_value=False)
    standing = aggregate_standing(rows)
    assert len(standing) == 1
    s = standing[0]
    assert (s.user, s.client_id, s.requests, s.throttled_requests, s.standing) == ("alice", "", 5, 1, "over")


def test_request_time_totals_are_in_milliseconds() -> None:
    config = ClientQuotaConfig({QuotaEntity(None, DEFAULT): {"request_percentage": 100.0}})
    outcomes = ClientQuotaEngine(config).evaluate(
        [ClientRequest(0, 1, "u", "c", "request", 1.5), ClientRequest(1, 1, "u", "c", "request", 0.25)])
    assert aggregate_intervals(outcomes, 60_000)[0].value_total == 1.75
