"""Forecast metrics in Prometheus exposition format (docs/metrics.md, "Forecasts").

One series per volume and per backlog topic, from the latest forecast. A limit not approached
within the horizon (or a volume that is not growing) is `+Inf`, so that an alert
`quotaplane_storage_volume_seconds_to_hard_limit < 86400` stays false and the series stays present.
The batch run (`quotaplane run`), `quotaplane forecast --metrics FILE` and the live service export
the same families.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from quotaplane.forecast.engine.backlog import BacklogForecast
from quotaplane.forecast.engine.volumes import VolumeForecast

VOLUME_LABELS = ("cluster", "broker_id", "log_dir")


def _value(seconds: float | None) -> float:
    return math.inf if seconds is None else seconds


class ForecastMetrics(Collector):
    """The gauges of one set of forecasts; `config` labels the storage/backlog configuration."""

    def __init__(self, volumes: Sequence[VolumeForecast], backlogs: Sequence[BacklogForecast],
                 config: str = "main") -> None:
        self.volumes = list(volumes)
        self.backlogs = list(backlogs)
        self.config = config

    def collect(self) -> Iterator[Metric]:
        labels = ["config", *VOLUME_LABELS]
        soft = GaugeMetricFamily("quotaplane_storage_volume_seconds_to_soft_limit",
                                 "Seconds until the volume breaches its soft limit (0: breached; +Inf: "
                                 "not within the forecast horizon).", labels=labels)
        hard = GaugeMetricFamily("quotaplane_storage_volume_seconds_to_hard_limit",
                                 "Seconds until the volume breaches its hard limit (0: breached; +Inf: "
                                 "not within the forecast horizon).", labels=labels)
        band = GaugeMetricFamily("quotaplane_storage_volume_seconds_to_hard_limit_bound",
                                 "The band around seconds_to_hard_limit (full without per-volume "
                                 "limits): low at the fastest, high at the slowest growth.",
                                 labels=[*labels, "bound"])
        full = GaugeMetricFamily("quotaplane_storage_volume_seconds_to_full",
                                 "Seconds until the volume has no available bytes left.", labels=labels)
        growth = GaugeMetricFamily("quotaplane_storage_volume_growth_bytes_per_second",
                                   "Growth of the volume's used bytes over the forecast window.",
                                   labels=[*labels, "method"])
        share = GaugeMetricFamily("quotaplane_storage_volume_growth_share_ratio",
                                  "A top contributing topic's share of the volume's positive growth.",
                                  labels=[*labels, "topic"])
        for f in self.volumes:
            key = [self.config, f.cluster, str(f.broker_id), f.log_dir]
            if f.hard_threshold_bytes is not None:
                soft.add_metric(key, _value(f.seconds_to_soft))
                hard.add_metric(key, _value(f.seconds_to_hard))
            full.add_metric(key, _value(f.seconds_to_full))
            band.add_metric([*key, "low"], _value(f.low))
            band.add_metric([*key, "high"], _value(f.high))
            if f.growth_bytes_per_second is not None:
                growth.add_metric([*key, f.method], f.growth_bytes_per_second)
            for c in f.top_contributors:
                share.add_metric([*key, c["topic"]], c["share"])
        yield from (soft, hard, band, full, growth, share)
        quota = GaugeMetricFamily("quotaplane_backlog_seconds_to_quota",
                                  "Seconds until the topic's backlog exceeds its size or time quota "
                                  "(0: exceeded; +Inf: not within the forecast horizon).",
                                  labels=["config", "namespace", "topic", "quota_type"])
        for b in self.backlogs:
            base = [self.config, b.namespace, b.topic]
            if b.size_limit >= 0:
                quota.add_metric([*base, "size"], _value(b.seconds_to_size_quota))
            if b.time_limit > 0:
                quota.add_metric([*base, "time"], _value(b.seconds_to_time_quota))
        yield quota
