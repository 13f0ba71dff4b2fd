"""One evaluation: the cluster source, the local source, fallbacks and effective limits."""

from __future__ import annotations

import pytest

from quotaplane.core.errors import InputError
from quotaplane.storage.config import StaticQuotas
from quotaplane.storage.engine import (
    MISSING_BROKER_DATA,
    Volume,
    effective_limits,
    effective_produce_limit,
    evaluate_cluster,
    evaluate_local,
)
from tests.storage.engine.helpers import cluster_config, local_config

CFG = cluster_config(("availableBytesBelow", "300"), ("availableBytesBelow", "100"), fallback="0.25")
VOLS = [Volume(1, "/a", 1000, 900), Volume(2, "/a", 1000, 200), Volume(2, "/b", 1000, 150),
        Volume(3, "/a", 1000, 800)]


def test_factor_is_the_minimum_over_volumes_and_names_the_throttling_volume() -> None:
    d = evaluate_cluster(CFG, VOLS)
    assert d.throttle_factor == 0.25
    assert (d.throttling_broker_id, d.throttling_log_dir) == (2, "/b")
    assert (d.active_brokers, d.active_log_dirs, d.fallback_reason) == (3, 4, None)
    assert [a.volume.key for a in d.assessments][:2] == [(2, "/b"), (2, "/a")]


def test_no_throttling_volume_at_factor_one() -> None:
    d = evaluate_cluster(CFG, [Volume(1, "/a", 1000, 300)])
    assert d.throttle_factor == 1.0 and d.throttling_broker_id is None


def test_ties_break_on_headroom_then_broker_then_log_dir() -> None:
    vols = [Volume(2, "/b", 1000, 50), Volume(1, "/z", 1000, 100), Volume(1, "/a", 1000, 100)]
    d = evaluate_cluster(CFG, vols)
    assert (d.throttling_broker_id, d.throttling_log_dir) == (2, "/b")  # deepest past the hard limit
    d = evaluate_cluster(CFG, vols[1:])
    assert (d.throttling_broker_id, d.throttling_log_dir) == (1, "/a")


def test_volumes_of_inactive_brokers_do_not_count() -> None:
    d = evaluate_cluster(CFG, VOLS, active_brokers=[1, 3])
    assert d.throttle_factor == 1.0 and d.active_log_dirs == 2 and d.active_brokers == 2


def test_missing_active_broker_applies_the_fallback() -> None:
    d = evaluate_cluster(CFG, VOLS, active_brokers=[1, 2, 3, 4])
    assert d.throttle_factor == 0.25 and d.fallback_reason == MISSING_BROKER_DATA
    assert d.missing_brokers == (4,) and d.fallback_applied and d.throttling_broker_id is None


def test_collection_error_applies_the_fallback_with_its_reason_first() -> None:
    d = evaluate_cluster(CFG, VOLS, active_brokers=[1, 2, 3, 4], collection_error="DESCRIBE_LOG_DIR_ERROR")
    assert (d.throttle_factor, d.fallback_reason) == (0.25, "DESCRIBE_LOG_DIR_ERROR")


def test_default_fallback_is_one() -> None:
    cfg = cluster_config(None, ("availableBytesBelow", "100"))
    assert evaluate_cluster(cfg, [], active_brokers=[1]).throttle_factor == 1.0


def test_no_volumes_and_no_active_brokers_is_factor_one() -> None:
    d = evaluate_cluster(CFG, [])
    assert (d.throttle_factor, d.fallback_reason, d.active_brokers) == (1.0, None, 0)


def test_the_same_volume_twice_is_an_input_error() -> None:
    with pytest.raises(InputError, match="observed twice"):
        evaluate_cluster(CFG, [Volume(1, "/a", 10, 1), Volume(1, "/a", 10, 2)])


def test_local_source_sees_only_the_observing_brokers_volumes() -> None:
    cfg = local_config(500, 1000, fallback="0.5")
    vols = [Volume(1, "/a", 1000, 900), Volume(1, "/b", 1000, 900), Volume(2, "/a", 1000, 5)]
    d = evaluate_local(cfg, vols, broker_id=1)
    assert (d.throttle_factor, d.used_bytes, d.active_log_dirs, d.observing_broker_id) == (1.0, 200, 2, 1)
    d2 = evaluate_local(cfg, vols, broker_id=2)
    assert d2.used_bytes == 995 and d2.throttle_factor == 1.0 - 495.0 / 500.0
    assert (d2.throttling_broker_id, d2.throttling_log_dir) == (2, None)


def test_local_source_fallbacks() -> None:
    cfg = local_config(500, 1000, fallback="0.5")
    d = evaluate_local(cfg, [Volume(1, "/a", 10, 5)], broker_id=7)
    assert (d.throttle_factor, d.fallback_reason, d.missing_brokers) == (0.5, MISSING_BROKER_DATA, (7,))
    d = evaluate_local(cfg, [Volume(7, "/a", 10, 5)], broker_id=7, collection_error="EXCEPTION")
    assert (d.throttle_factor, d.fallback_reason) == (0.5, "EXCEPTION")


def test_local_source_without_limits_never_throttles() -> None:
    d = evaluate_local(local_config(None, None), [Volume(1, "/a", 10**15, 0)], broker_id=1)
    assert d.throttle_factor == 1.0


@pytest.mark.parametrize(("produce", "factor", "limit"), [
    (1000.0, 1.0, 1000.0), (1000.0, 0.5, 500.0), (1000.0, 0.0, 1.0), (1000.0, 0.0005, 1.0),
    (0.5, 1.0, 1.0), (None, 1.0, None), (None, 0.5, None), (None, 0.0, 1.0),
])
def test_effective_produce_limit(produce: float | None, factor: float, limit: float | None) -> None:
    assert effective_produce_limit(produce, factor) == limit


def test_fetch_and_request_are_untouched_but_floored_and_excluded_principals_unlimited() -> None:
    q = StaticQuotas(produce=100.0, fetch=0.5, request=None)
    assert effective_limits(q, 0.0).as_dict() == {"produce": 1.0, "fetch": 1.0, "request": None}
    assert effective_limits(q, 0.3, "canary", frozenset({"canary"})).as_dict() == \
        {"produce": None, "fetch": None, "request": None}
    assert effective_limits(q, 0.3, "bob", frozenset({"canary"})).produce == 30.0
