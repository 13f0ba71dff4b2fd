"""Producer throttle notice metrics (spec: pip-385-producer-throttle-protocol, Metrics; docs/metrics.md).

From the `notice_comparison` rows (per broker, topic and reason), totals over the evaluated period:

- `quotaplane_pulsar_broker_topic_publish_rate_limit_count_total` (broker, topic, limiter): breaches
  that started a throttle, with the limiter attribute PIP-385 adds to Pulsar's
  `pulsar.broker.topic.publish.rate.limit.count` (limiter = the `ThrottlingReason`; quotaplane's
  prefix keeps it apart from a broker's own series, docs/metrics.md);
- `quotaplane_producer_throttle_notices_total` (broker, topic, reason, receipt): notices by receipt
  (`in_time|late|unsupported`);
- `quotaplane_producer_throttle_pause_seconds_total` (broker, topic, reason): `pause_for_millis` sent;
- `quotaplane_connection_paused_seconds_total` (broker, topic, reason, notices=`true|false`): the
  connection pauses the notices caused, with PIP-385 and without (today's behaviour);
- `quotaplane_stalled_topics_total` (broker, topic, reason, notices): innocent topics those pauses
  stalled.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from quotaplane.notices.engine.evaluate import RECEIPTS

RATE_LIMIT_COUNT = "quotaplane_pulsar_broker_topic_publish_rate_limit_count"
NOTICES = "quotaplane_producer_throttle_notices"
PAUSE = "quotaplane_producer_throttle_pause_seconds"
CONNECTION_PAUSED = "quotaplane_connection_paused_seconds"
STALLED = "quotaplane_stalled_topics"
_KEY = ("broker", "topic", "reason")


@dataclass(eq=False)
class NoticeMetrics(Collector):
    """The notice metrics of one evaluation, from its comparison rows."""

    comparison: Sequence[Mapping[str, Any]]

    def collect(self) -> Iterator[Metric]:
        rows = sorted(self.comparison, key=lambda r: tuple(r[k] for k in _KEY))
        limits = CounterMetricFamily(RATE_LIMIT_COUNT, "publish rate limit breaches that started a throttle, "
                                     "by limiter (PIP-385)", labels=["broker", "topic", "limiter"])
        notices = CounterMetricFamily(NOTICES, "ThrottleProducer notices by receipt (PIP-385)",
                                      labels=[*_KEY, "receipt"])
        pause = CounterMetricFamily(PAUSE, "pause_for_millis sent to producers, in seconds",
                                    labels=list(_KEY))
        paused = CounterMetricFamily(CONNECTION_PAUSED, "connection read pauses caused by the throttles, "
                                     "with notices (true) and without (false, today's behaviour)",
                                     labels=[*_KEY, "notices"])
        stalled = CounterMetricFamily(STALLED, "innocent topics stalled by those pauses, with notices (true) "
                                      "and without (false)", labels=[*_KEY, "notices"])
        for r in rows:
            key = [str(r[k]) for k in _KEY]
            limits.add_metric(key, r["notices"])
            for receipt in RECEIPTS:
                notices.add_metric([*key, receipt], r[receipt])
            pause.add_metric(key, r["pause_for_millis_total"] / 1000)
            paused.add_metric([*key, "true"], r["connection_paused_ms"] / 1000)
            paused.add_metric([*key, "false"], r["connection_paused_ms_without_notices"] / 1000)
            stalled.add_metric([*key, "true"], r["stalled_topics"])
            stalled.add_metric([*key, "false"], r["stalled_topics_without_notices"])
        yield from (limits, notices, pause, paused, stalled)
