"""The storage metrics of one evaluation, in Prometheus text format (spec: Metrics)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from quotaplane.core.exposition import render
from quotaplane.storage.engine import Volume, evaluate_cluster, evaluate_local
from quotaplane.storage.metrics import METRICS, StorageMetrics, state_from_decision
from tests.storage.engine.helpers import cluster_config, local_config

LABELS = 'cluster="c",config="main",observing_broker_id="{b}",source="{s}"'


def text(states) -> str:
    registry = CollectorRegistry()
    registry.register(StorageMetrics(states))
    return render(registry)


def test_local_source_exposes_the_legacy_storage_checker_gauges() -> None:
    config = local_config(100, None)
    d = evaluate_local(config, [Volume(4, "/a", 1000, 850)], broker_id=4)
    out = text([state_from_decision(d, config, cluster="c")])
    labels = LABELS.format(b=4, s="local")
    assert f"quotaplane_storage_total_used_bytes{{{labels}}} 150.0" in out
    assert f"quotaplane_storage_soft_limit_bytes{{{labels}}} 100.0" in out
    assert f"quotaplane_storage_hard_limit_bytes{{{labels}}} 9.223372036854776e+18" in out
    assert "quotaplane_storage_throttling_volume{" not in out  # 150 used bytes: not yet throttled


def test_cluster_source_has_no_legacy_gauges_and_failed_rounds_keep_no_active_counts() -> None:
    config = cluster_config(None, ("availableBytesBelow", "100"), fallback="0.0")
    d = evaluate_cluster(config, [Volume(1, "/a", 1000, 50)], collection_error="EXCEPTION")
    out = text([state_from_decision(d, config, cluster="c")])
    labels = LABELS.format(b="", s="cluster")
    assert "total_used_bytes" not in out and "active_brokers{" not in out
    assert ('quotaplane_storage_fallback_throttle_factor_applied_total{cluster="c",config="main",'
            'observing_broker_id="",reason="EXCEPTION",source="cluster"} 1.0') in out
    assert f"quotaplane_storage_effective_produce_limit{{{labels}}} 1.0" in out


def test_every_metric_maps_to_a_spec_and_a_shipped_name() -> None:
    assert set(METRICS) >= {"throttle_factor", "fallback_throttle_factor_applied", "throttling_volume",
                            "active_brokers", "active_log_dirs"}
    assert all(spec and shipped and help_ for spec, shipped, help_ in METRICS.values())
