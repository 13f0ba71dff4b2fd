"""The broker settings client quotas are evaluated with, and their Kafka defaults.

spec: Kafka `QuotaConfig`: `quota.window.num` 11 and
`quota.window.size.seconds` 1, both at least 1, with the same defaults for the `controller.`
variants; kip-786-quota-value-metrics (Configuration): `client.quota.value.metric.enable`, default
false. The storage callback's static produce quota is `client.quota.callback.static.produce`.
"""

from __future__ import annotations

from dataclasses import dataclass

STRICT = "strict"
PERMISSIVE = "permissive"
MUTATION_MODES = (STRICT, PERMISSIVE)


@dataclass(frozen=True)
class ClientQuotaSettings:
    """How requests are measured and limited.

    - `window_num` x `window_size_seconds`: the sampled rate of produce, fetch and request quotas.
    - `controller_window_num` x `controller_window_size_seconds`: the controller mutation token
      bucket (burst = num x size x quota).
    - `metrics_num_samples` x `metrics_sample_window_ms`: Kafka's default metric config
      (`metrics.num.samples` 2, `metrics.sample.window.ms` 30000), which the controller mutation
      `mutation-rate` uses.
    - `quota_value_metric`: KIP-786's `client.quota.value.metric.enable`.
    - `storage_combined`: the storage quota callback is installed, so the produce quota is the
      client's quota (else `static_produce`, None = unlimited) times the storage throttle factor,
      at least 1 byte/s, and produce usage is always recorded.
    - `controller_mutation_mode`: `strict` (check, then record only if allowed: CreateTopics v6+,
      CreatePartitions v3+, DeleteTopics v5+) or `permissive` (record, then check).
    - `interval_ms`: the length of the per-interval rows of the outputs.
    """

    window_num: int = 11
    window_size_seconds: int = 1
    controller_window_num: int = 11
    controller_window_size_seconds: int = 1
    metrics_num_samples: int = 2
    metrics_sample_window_ms: int = 30_000
    quota_value_metric: bool = False
    storage_combined: bool = False
    static_produce: float | None = None
    controller_mutation_mode: str = STRICT
    interval_ms: int = 60_000

    def __post_init__(self) -> None:
        for name in ("window_num", "window_size_seconds", "controller_window_num",
                     "controller_window_size_seconds", "metrics_num_samples",
                     "metrics_sample_window_ms", "interval_ms"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.controller_mutation_mode not in MUTATION_MODES:
            raise ValueError(f"controller_mutation_mode must be one of {', '.join(MUTATION_MODES)}")
        if self.static_produce is not None and not self.static_produce >= 0:
            raise ValueError("static_produce must not be negative")

    @property
    def window_ms(self) -> int:
        return self.window_size_seconds * 1000

    @property
    def controller_window_ms(self) -> int:
        return self.controller_window_size_seconds * 1000

    @property
    def request_max_throttle_ms(self) -> int:
        """`ClientRequestQuotaManager.maxThrottleTimeMs`: one quota window."""
        return self.window_size_seconds * 1000
