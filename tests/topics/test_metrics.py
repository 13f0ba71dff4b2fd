"""Topic bytes-in metrics rendered in Prometheus text format."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from quotaplane.core.exposition import render
from quotaplane.topics.engine.evaluate import MeterSnapshot
from quotaplane.topics.metrics import TopicMetrics, meter_names

METERS = [
    MeterSnapshot(1, None, 0, 10, 2.5, 20, 4.0, 30, 6.0, 1000, "total"),
    MeterSnapshot(1, "orders", 0, 10, 2.5, 20, 4.0, 0, 0.0, 400, "explicit"),
    MeterSnapshot(1, "clicks", 500, 0, 0.0, 0, 0.0, 30, 6.0, 600, "default"),
]


def test_every_meter_is_a_counter_and_a_one_minute_rate_gauge() -> None:
    registry = CollectorRegistry()
    registry.register(TopicMetrics(METERS, {(1, "orders", "throttled"): 3}, {"accepted": 2, "rejected": 1}))
    text = render(registry)
    for scope in ("topic", "broker"):
        for meter in ("bytes_in", "throttled_bytes_in", "error_bytes_in"):
            counter, gauge = meter_names(scope, meter)
            assert f"# TYPE {counter} counter" in text
            assert f"# TYPE {gauge} gauge" in text
    assert 'quotaplane_topic_bytes_in_total{broker_id="1",topic="orders"} 10.0' in text
    assert 'quotaplane_topic_throttled_bytes_in_one_minute_rate{broker_id="1",topic="orders"} 4.0' in text
    assert 'quotaplane_topic_error_bytes_in_total{broker_id="1",topic="clicks"} 30.0' in text
    assert 'quotaplane_broker_error_bytes_in_one_minute_rate{broker_id="1"} 6.0' in text
    assert ('quotaplane_topic_bytes_in_threshold_bytes_per_second{broker_id="1",source="default",'
            'topic="clicks"} 600.0') in text
    assert 'quotaplane_broker_total_bytes_in_threshold_bytes_per_second{broker_id="1"} 1000.0' in text
    assert ('quotaplane_topic_produce_requests_total{broker_id="1",decision="throttled",topic="orders"} 3.0'
            in text)
    assert 'quotaplane_topic_threshold_changes_total{status="rejected"} 1.0' in text
    assert "_created" not in text


def test_no_meters_render_empty_families() -> None:
    registry = CollectorRegistry()
    registry.register(TopicMetrics([]))
    text = render(registry)
    assert "quotaplane_topic_bytes_in_total{" not in text
    assert 'quotaplane_topic_threshold_changes_total{status="accepted"} 0.0' in text
