"""Client quota metrics (Prometheus names for Kafka's MBeans) and report sections, without Spark."""

from __future__ import annotations

import math

from prometheus_client import CollectorRegistry

from quotaplane.clients import metrics as client_metrics
from quotaplane.clients.report import ClientsReportData, build_sections
from quotaplane.core.exposition import render
from quotaplane.core.report import render_report

LATEST = [
    {"broker_id": 1, "quota_type": "produce", "user": "etl", "client_id": "", "rate": 1500.0,
     "throttle_time_avg_ms": 12.5, "quota_limit": 1000.0, "quota_value": 1000.0, "utilisation_pct": 150.0,
     "tokens": None},
    {"broker_id": 1, "quota_type": "request", "user": "", "client_id": "web", "rate": 2.5,
     "throttle_time_avg_ms": 0.0, "quota_limit": None, "quota_value": None, "utilisation_pct": None,
     "tokens": None},
    {"broker_id": 2, "quota_type": "controller_mutation", "user": "ops", "client_id": "adm", "rate": 0.1,
     "throttle_time_avg_ms": 0.0, "quota_limit": 5.0, "quota_value": None, "utilisation_pct": 2.0,
     "tokens": 40.0},
]
TOTALS = [
    {"broker_id": 1, "quota_type": "produce", "user": "etl", "client_id": "", "requests": 10,
     "throttled_requests": 3, "throttle_time_total_ms": 40, "violated_requests": 3, "rate_max": 1600.0,
     "quota_limit_min": 1000.0, "utilisation_max_pct": 160.0, "standing": "over"},
    {"broker_id": 1, "quota_type": "request", "user": "", "client_id": "web", "requests": 4,
     "throttled_requests": 0, "throttle_time_total_ms": 0, "violated_requests": 0, "rate_max": 2.5,
     "quota_limit_min": None, "utilisation_max_pct": None, "standing": "unlimited"},
    {"broker_id": 2, "quota_type": "controller_mutation", "user": "ops", "client_id": "adm", "requests": 1,
     "throttled_requests": 0, "throttle_time_total_ms": 0, "violated_requests": 0, "rate_max": 0.1,
     "quota_limit_min": 5.0, "utilisation_max_pct": 85.0, "standing": "near"},
]


def rendered(value_metric: bool) -> str:
    registry = CollectorRegistry()
    registry.register(client_metrics.ClientMetrics(LATEST, TOTALS, value_metric))
    return render(registry)


def test_kafka_names_and_labels() -> None:
    text = rendered(True)
    assert 'quotaplane_kafka_server_produce_byte_rate{broker_id="1",client_id="",user="etl"} 1500.0' in text
    assert 'quotaplane_kafka_server_produce_throttle_time{broker_id="1",client_id="",user="etl"} 12.5' in text
    assert 'quotaplane_kafka_server_produce_quota_value{broker_id="1",client_id="",user="etl"} 1000.0' in text
    assert 'quotaplane_kafka_server_request_request_time{broker_id="1",client_id="web",user=""} 2.5' in text
    assert ('quotaplane_kafka_server_controllermutation_mutation_rate{broker_id="2",client_id="adm",'
            'user="ops"} 0.1' in text)
    assert ('quotaplane_kafka_server_controllermutation_tokens{broker_id="2",client_id="adm",user="ops"} 40.0'
            in text)
    assert ('quotaplane_client_quota_utilisation_percent{broker_id="1",client_id="",quota_type="produce",'
            'user="etl"} 150.0') in text
    assert ('quotaplane_client_throttle_time_seconds_total{broker_id="1",client_id="",quota_type="produce",'
            'user="etl"} 0.04') in text
    # unlimited: no quota-value sample, and no controller mutation quota-value family (not in KIP-786)
    assert 'quotaplane_kafka_server_request_quota_value{' not in text
    assert "quotaplane_kafka_server_controllermutation_quota_value" not in text



def test_quota_utilisation_ratio_of_kip_1373() -> None:
    text = rendered(False)
    assert "# TYPE quotaplane_client_quota_utilisation_ratio gauge" in text
    # rate 1500 over the effective quota 1000 at the last request: a ratio, not capped at 1
    assert ('quotaplane_client_quota_utilisation_ratio{broker_id="1",client_id="",quota_type="produce",'
            'user="etl"} 1.5') in text
    # an unlimited quota: NaN (the series exists)
    assert ('quotaplane_client_quota_utilisation_ratio{broker_id="1",client_id="web",quota_type="request",'
            'user=""} NaN') in text
    # the controller mutation quota has no quota-utilization (KIP-1373 leaves the token bucket out)
    assert 'quotaplane_client_quota_utilisation_ratio{broker_id="2"' not in text


def test_utilisation_ratio_is_nan_without_a_positive_quota_or_a_rate() -> None:
    ratio = client_metrics.utilisation_ratio
    assert ratio({"rate": 250.0, "quota_limit": 1000.0}) == 0.25
    assert ratio({"rate": 0.0, "quota_limit": 1.0}) == 0.0
    for row in ({"rate": 1.0, "quota_limit": None}, {"rate": 1.0, "quota_limit": 0.0},
                {"rate": 1.0, "quota_limit": -5.0}, {"rate": None, "quota_limit": 10.0}):
        assert math.isnan(ratio(row))

def test_no_quota_value_metric_unless_enabled() -> None:
    text = rendered(False)
    assert "quota_value" not in text
    assert "quotaplane_kafka_server_fetch_byte_rate" in text  # families exist (empty) for every type


def test_every_kafka_metric_maps_a_spec_attribute() -> None:
    attributes = {(m.mbean.split(",")[0], m.attribute)
                  for ms in client_metrics.KAFKA_METRICS.values() for m in ms}
    assert ("kafka.server:type=Produce", "quota-value") in attributes
    assert ("kafka.server:type=Fetch", "byte-rate") in attributes
    assert ("kafka.server:type=Request", "request-time") in attributes
    assert ("kafka.server:type=Request", "throttle-time") in attributes


def test_report_sections() -> None:
    summary = {"requests": 15, "recorded_requests": 15, "throttled_requests": 3, "throttle_time_total_ms": 40}
    intervals = [{"broker_id": 1, "quota_type": "produce", "user": "etl", "client_id": "",
                  "interval_start_ms": 60_000 * i, "throttle_time_total_ms": 10 * i,
                  "quota_limit_min": 1000.0}
                 for i in range(4)]
    storage = {"decisions": [{"ts_ms": 0, "throttle_factor": 1.0, "observing_broker_id": None},
                             {"ts_ms": 120_000, "throttle_factor": 0.5, "observing_broker_id": None}],
               "produce_intervals": intervals,
               "impact": [{"broker_id": 1, "quota_type": "produce", "user": "etl", "client_id": "",
                           "base": 1000.0, "quota_limit_min": 500.0, "factor_intervals": 2,
                           "throttled_under_factor": 3}],
               "static_produce": None}
    sections = build_sections(ClientsReportData(TOTALS, summary, intervals, storage))
    assert [s.title for s in sections] == ["Kafka client quotas", "Client throttling over time",
                                           "Storage throttle factor and client produce limits"]
    html = render_report("t", "s", sections).replace("<wbr>", "")  # no line break hints
    assert "Furthest over their quota" in html and "b1 produce etl/—" in html
    assert build_sections(ClientsReportData(TOTALS[1:], summary, [], None))[-1].title == "Kafka client quotas"
