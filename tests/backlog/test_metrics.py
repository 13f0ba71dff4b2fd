"""The metric names, labels and histogram buckets, rendered with prometheus_client."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from quotaplane.backlog.engine.stats import TopicMetrics
from quotaplane.backlog.metrics import BacklogMetrics
from quotaplane.core.exposition import render

TOPICS = [TopicMetrics("t/ns", "persistent://t/ns/a", 10, 5, 100, 60, 1, 2),
          TopicMetrics("t/ns", "persistent://t/ns/b", 20, -1, -1, -1, 0, 3)]
A = 'cluster="c1",namespace="t/ns",topic="persistent://t/ns/T"'


def _render(topic_level: bool, durations: list[float]) -> str:
    registry = CollectorRegistry()
    registry.register(BacklogMetrics("c1", topic_level, TOPICS, durations))
    return render(registry)


def test_topic_level_metrics_carry_the_spec_names_and_labels() -> None:
    text = _render(True, [0.5])
    a, b = A.replace("T", "a"), A.replace("T", "b")
    assert f"quotaplane_pulsar_storage_backlog_age_seconds{{{a}}} 5.0" in text
    assert f"quotaplane_pulsar_storage_backlog_age_seconds{{{b}}} -1.0" in text
    assert f"quotaplane_pulsar_storage_backlog_quota_limit{{{a}}} 100.0" in text
    assert f"quotaplane_pulsar_storage_backlog_quota_limit_time{{{a}}} 60.0" in text
    assert f"quotaplane_pulsar_storage_backlog_size{{{b}}} 20.0" in text
    b_time = b.replace(',topic=', ',quota_type="time",topic=')
    assert f"quotaplane_pulsar_storage_backlog_quota_exceeded_evictions_total{{{b_time}}} 3.0" in text
    broker = "quotaplane_pulsar_broker_storage_backlog_quota_exceeded_evictions_total"
    assert f'{broker}{{cluster="c1",quota_type="size"}} 1.0' in text
    assert f'{broker}{{cluster="c1",quota_type="time"}} 5.0' in text
    assert "# TYPE quotaplane_pulsar_storage_backlog_quota_exceeded_evictions_total counter" in text
    assert "_created" not in text


def test_without_topic_level_metrics_values_are_by_namespace_and_the_age_is_left_out() -> None:
    text = _render(False, [])
    assert "quotaplane_pulsar_storage_backlog_age_seconds" not in text
    assert 'quotaplane_pulsar_storage_backlog_quota_limit{cluster="c1",namespace="t/ns"} 100.0' in text
    assert 'quotaplane_pulsar_storage_backlog_quota_limit_time{cluster="c1",namespace="t/ns"} 60.0' in text
    assert 'quotaplane_pulsar_storage_backlog_size{cluster="c1",namespace="t/ns"} 30.0' in text
    assert ('quotaplane_pulsar_storage_backlog_quota_exceeded_evictions_total{cluster="c1",namespace="t/ns",'
            'quota_type="time"} 5.0') in text
    assert "topic=" not in text


def test_check_duration_histogram_has_the_pip_buckets() -> None:
    text = _render(True, [0.2, 5.0, 7.0, 301.0])
    bucket = "quotaplane_pulsar_storage_backlog_quota_check_duration_seconds_bucket"
    for le, count in (("5.0", 2), ("10.0", 3), ("30.0", 3), ("60.0", 3), ("300.0", 3), ("+Inf", 4)):
        assert f'{bucket}{{cluster="c1",le="{le}"}} {count:.1f}' in text
    assert 'quotaplane_pulsar_storage_backlog_quota_check_duration_seconds_count{cluster="c1"} 4.0' in text
    assert 'quotaplane_pulsar_storage_backlog_quota_check_duration_seconds_sum{cluster="c1"} 313.2' in text
    assert text.count("_bucket{") == 6
