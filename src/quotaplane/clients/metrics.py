"""Client quota metrics: Kafka's per-client MBeans, in Prometheus form.

spec: kip-786-quota-value-metrics (Monitoring). Kafka exposes, per metric tags (user, client-id),
`kafka.server:type={Produce,Fetch},user=U,client-id=C` with `byte-rate` and `throttle-time`, and
`kafka.server:type=Request,...` with `request-time` and `throttle-time`; KIP-786 adds `quota-value`
to the three (only when `client.quota.value.metric.enable=true`). The controller mutation quota
has `kafka.server:type=ControllerMutation,...` with `mutation-rate`, `tokens`, `throttle-time`.

Prometheus names follow the common JMX-exporter form, `kafka_server_<type>_<attribute>` in snake
case, under quotaplane's prefix (`quotaplane_kafka_server_...`: a broker's own series and these
never mix in one query, docs/metrics.md), with labels `broker_id` (quotas are per broker), `user`
and `client_id` (the metric tags; "" when a tag is not used). Values are those of each sharing
group's last interval: the rate and quota at its last request, throttle time the average over
throttled requests (0 when none). The other quotaplane_* counters count over the whole input, in
base units (throttle time in seconds).

KIP-1373 (Client Quota Utilization Metrics, the live successor of KIP-786's quota value) adds
`quota-utilization` to the Produce, Fetch and Request MBeans: the measured rate over the effective
quota (the bound the broker enforces), not capped, NaN when the quota is unlimited or not positive;
ControllerMutation has none (its token bucket is not a rate bound). quotaplane exports it as the
ratio `quotaplane_client_quota_utilisation_ratio` (the KIP's attribute is that ratio x 100). See
docs/metrics.md for the table and the former names.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from quotaplane.clients.engine.quota_types import (
    CONTROLLER_MUTATION,
    FETCH,
    PRODUCE,
    QUOTA_VALUE_TYPES,
    REQUEST,
)

LABELS = ["broker_id", "user", "client_id"]


@dataclass(frozen=True)
class KafkaMetric:
    """One Prometheus gauge and the Kafka MBean attribute it maps."""

    name: str
    mbean: str
    attribute: str
    field: str
    doc: str


def _type_metrics(quota_type: str, mbean_type: str, rate_attribute: str, rate_doc: str) -> list[KafkaMetric]:
    prefix = f"quotaplane_kafka_server_{mbean_type.lower()}"
    mbean = f"kafka.server:type={mbean_type},user=([-.\\w]+),client-id=([-.\\w]+)"
    metrics = [
        KafkaMetric(f"{prefix}_{rate_attribute.replace('-', '_')}", mbean, rate_attribute, "rate", rate_doc),
        KafkaMetric(f"{prefix}_throttle_time", mbean, "throttle-time", "throttle_time_avg_ms",
                    "Average throttle time in ms of the throttled requests of the last interval"),
    ]
    if quota_type == CONTROLLER_MUTATION:
        metrics.append(KafkaMetric(f"{prefix}_tokens", mbean, "tokens", "tokens",
                                   "Tokens left in the token bucket after the last request"))
    if quota_type in QUOTA_VALUE_TYPES:
        metrics.append(KafkaMetric(f"{prefix}_quota_value", mbean, "quota-value", "quota_value",
                                   "The quota (upper bound) in force at the last request (KIP-786)"))
    return metrics


KAFKA_METRICS: dict[str, list[KafkaMetric]] = {
    PRODUCE: _type_metrics(PRODUCE, "Produce", "byte-rate", "Produce bytes per second (sampled rate)"),
    FETCH: _type_metrics(FETCH, "Fetch", "byte-rate", "Fetch bytes per second (sampled rate)"),
    REQUEST: _type_metrics(REQUEST, "Request", "request-time",
                           "Request thread time as percent of one thread (sampled rate)"),
    CONTROLLER_MUTATION: _type_metrics(CONTROLLER_MUTATION, "ControllerMutation", "mutation-rate",
                                       "Partition mutations per second (sampled rate)"),
}

REQUESTS_TOTAL = "quotaplane_client_requests"
THROTTLED_TOTAL = "quotaplane_client_throttled_requests"
THROTTLE_SECONDS_TOTAL = "quotaplane_client_throttle_time_seconds"  # formerly ..._throttle_time_ms_total
UTILISATION = "quotaplane_client_quota_utilisation_percent"
UTILISATION_RATIO = "quotaplane_client_quota_utilisation_ratio"
#: the quota types with KIP-1373's `quota-utilization` (not ControllerMutation)
UTILISATION_TYPES = (PRODUCE, FETCH, REQUEST)


class ClientMetrics(Collector):
    """Yields the client quota families from rows gathered by the pipeline.

    `latest`: per sharing group, its last interval row (mapping with `broker_id`, `quota_type`,
    `user`, `client_id`, `rate`, `throttle_time_avg_ms`, `quota_value`, `utilisation_pct`, and for
    controller mutations `tokens`). `totals`: per sharing group `requests`, `throttled_requests`,
    `throttle_time_total_ms`.
    """

    def __init__(self, latest: Sequence[Mapping[str, object]], totals: Sequence[Mapping[str, object]],
                 quota_value_metric: bool) -> None:
        self.latest = list(latest)
        self.totals = list(totals)
        self.quota_value_metric = quota_value_metric

    def collect(self) -> Iterator[Metric]:
        for quota_type, metrics in KAFKA_METRICS.items():
            rows = [r for r in self.latest if r["quota_type"] == quota_type]
            for metric in metrics:
                if metric.attribute == "quota-value" and not self.quota_value_metric:
                    continue
                family = GaugeMetricFamily(metric.name, f"{metric.doc} ({metric.mbean} {metric.attribute})",
                                           labels=LABELS)
                for row in rows:
                    value = row.get(metric.field)
                    if value is not None:
                        family.add_metric(_labels(row), float(value))  # type: ignore[arg-type]
                yield family
        utilisation = GaugeMetricFamily(UTILISATION, "Rate / quota x 100 at the last request",
                                        labels=[*LABELS, "quota_type"])
        for row in self.latest:
            if row.get("utilisation_pct") is not None:
                utilisation.add_metric([*_labels(row), str(row["quota_type"])],
                                       float(row["utilisation_pct"]))  # type: ignore[arg-type]
        yield utilisation
        ratio = GaugeMetricFamily(
            UTILISATION_RATIO, "Measured rate / effective quota at the last request, not capped at 1; NaN "
            "when unlimited (KIP-1373 quota-utilization / 100)", labels=[*LABELS, "quota_type"])
        for row in self.latest:
            if row["quota_type"] in UTILISATION_TYPES:
                ratio.add_metric([*_labels(row), str(row["quota_type"])], utilisation_ratio(row))
        yield ratio
        for name, field, doc, scale in (
                (REQUESTS_TOTAL, "requests", "Recorded requests", 1.0),
                (THROTTLED_TOTAL, "throttled_requests", "Requests with a throttle time", 1.0),
                (THROTTLE_SECONDS_TOTAL, "throttle_time_total_ms", "Throttle time in seconds", 1000.0)):
            counter = CounterMetricFamily(name, doc, labels=[*LABELS, "quota_type"])
            for row in self.totals:
                counter.add_metric([*_labels(row), str(row["quota_type"])],
                                   float(row[field]) / scale)  # type: ignore[arg-type]
            yield counter


def utilisation_ratio(row: Mapping[str, object]) -> float:
    """KIP-1373 `quota-utilization` as a ratio: measured rate / effective quota (`rate` and `quota_limit`
    at the last request), not capped at 1; NaN when the quota is unlimited (null) or not positive, or
    no rate was measured."""
    rate, quota = row.get("rate"), row.get("quota_limit")
    if rate is None or quota is None or not float(quota) > 0.0:  # type: ignore[arg-type]
        return math.nan
    return float(rate) / float(quota)  # type: ignore[arg-type]


def _labels(row: Mapping[str, object]) -> list[str]:
    return [str(row["broker_id"]), str(row["user"]), str(row["client_id"])]
