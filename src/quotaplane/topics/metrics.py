"""Topic bytes-in quota metrics (spec: kafka-topic-bytes-in-quota; mapping in docs/metrics.md).

The spec's three meters, per topic and broker-wide (Low level design, 2; Discussions, 1):
bytesIn (accepted bytes), throttled bytesIn (dropped by the quota) and error bytesIn (above
`message.max.bytes`). Each meter gives a counter (its count, bytes) and a gauge (its one-minute
rate, bytes/s), read at the end of the evaluated period:

- `quotaplane_topic_bytes_in_total`, `quotaplane_topic_bytes_in_one_minute_rate`
- `quotaplane_topic_throttled_bytes_in_total`, `quotaplane_topic_throttled_bytes_in_one_minute_rate`
- `quotaplane_topic_error_bytes_in_total`, `quotaplane_topic_error_bytes_in_one_minute_rate`
  (labels broker_id, topic), and the same with `quotaplane_broker_` (label broker_id);
- `quotaplane_topic_bytes_in_threshold_bytes_per_second` (broker_id, topic, source: explicit|default)
  and `quotaplane_broker_total_bytes_in_threshold_bytes_per_second` (broker_id): the thresholds then
  in force, the spec's `bytes.in.per.sec.threshold` and `total.bytes.in.per.sec.threshold` (named in
  base units; formerly `..._bytes_in_per_sec_threshold`);
- `quotaplane_topic_produce_requests_total` (broker_id, topic, decision);
- `quotaplane_topic_threshold_changes_total` (status: accepted|rejected): the configured settings.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from quotaplane.topics.engine.evaluate import MeterSnapshot

PREFIX = "quotaplane"
METERS = {
    "bytes_in": "bytes accepted and appended (the spec's bytesIn meter)",
    "throttled_bytes_in": "bytes of requests dropped by the bytes-in quota (throttled bytesIn meter)",
    "error_bytes_in": "bytes of requests above message.max.bytes (error bytesIn meter)",
}
TOPIC_THRESHOLD = f"{PREFIX}_topic_bytes_in_threshold_bytes_per_second"
BROKER_THRESHOLD = f"{PREFIX}_broker_total_bytes_in_threshold_bytes_per_second"
REQUESTS = f"{PREFIX}_topic_produce_requests"  # rendered with `_total`
CHANGES = f"{PREFIX}_topic_threshold_changes"  # rendered with `_total`


def meter_names(scope: str, meter: str) -> tuple[str, str]:
    """(counter name as rendered, gauge name) of a meter; scope is `topic` or `broker`."""
    return f"{PREFIX}_{scope}_{meter}_total", f"{PREFIX}_{scope}_{meter}_one_minute_rate"


@dataclass(eq=False)
class TopicMetrics(Collector):
    """The topic bytes-in metrics of one evaluation.

    `meters`: one snapshot per broker (topic None) and per topic on a broker; `requests`: request
    counts by (broker_id, topic, decision); `changes`: settings by status (accepted, rejected).
    """

    meters: Sequence[MeterSnapshot]
    requests: Mapping[tuple[int, str, str], int] = field(default_factory=dict)
    changes: Mapping[str, int] = field(default_factory=dict)

    def collect(self) -> Iterator[Metric]:
        topics = sorted((m for m in self.meters if m.topic is not None), key=lambda m: (m.broker_id, m.topic))
        brokers = sorted((m for m in self.meters if m.topic is None), key=lambda m: m.broker_id)
        for scope, rows, labels in (("topic", topics, ["broker_id", "topic"]),
                                    ("broker", brokers, ["broker_id"])):
            for meter, what in METERS.items():
                counter_name, gauge_name = meter_names(scope, meter)
                where = "per topic" if scope == "topic" else "broker-wide"
                counter = CounterMetricFamily(counter_name.removesuffix("_total"),
                                              f"Count of {what}, {where}", labels=labels)
                gauge = GaugeMetricFamily(gauge_name, f"One-minute rate (bytes/s) of {what}, {where}",
                                          labels=labels)
                for m in rows:
                    values = [str(m.broker_id), m.topic] if scope == "topic" else [str(m.broker_id)]
                    counter.add_metric(values, float(getattr(m, f"{meter}_count")))
                    gauge.add_metric(values, float(getattr(m, f"{meter}_rate")))
                yield counter
                yield gauge
        topic_threshold = GaugeMetricFamily(
            TOPIC_THRESHOLD, "The topic's bytes.in.per.sec.threshold in force (bytes/s), explicit or its "
            "default share", labels=["broker_id", "topic", "source"])
        for m in topics:
            topic_threshold.add_metric([str(m.broker_id), str(m.topic), m.threshold_source],
                                       float(m.threshold))
        yield topic_threshold
        broker_threshold = GaugeMetricFamily(
            BROKER_THRESHOLD, "The broker's total.bytes.in.per.sec.threshold (bytes/s)", labels=["broker_id"])
        for m in brokers:
            broker_threshold.add_metric([str(m.broker_id)], float(m.threshold))
        yield broker_threshold
        requests = CounterMetricFamily(REQUESTS, "Produce requests judged, by decision (accepted, "
                                       "throttled, error)", labels=["broker_id", "topic", "decision"])
        for (broker_id, topic, decision), count in sorted(self.requests.items()):
            requests.add_metric([str(broker_id), topic, decision], float(count))
        yield requests
        changes = CounterMetricFamily(CHANGES, "Topic threshold settings of the configuration, by status "
                                      "(rejected: the explicit thresholds would sum above the total)",
                                      labels=["status"])
        for status in ("accepted", "rejected"):
            changes.add_metric([status], float(self.changes.get(status, 0)))
        yield changes
