"""A Python producer that honours PIP-385 throttle notices (docs/notices.md, "The producer").

`ThrottleAwareProducer` wraps confluent-kafka's `Producer`; `ThrottleAwarePulsarProducer` wraps a
pulsar-client producer where pulsar-client is installed (it is not a dependency). Both keep a
`NoticeConnection` to the notice channel and hold the messages of throttled topics.
"""

from quotaplane.client.errors import ProducerThrottledError
from quotaplane.client.metrics import ClientMetrics, default_metrics
from quotaplane.client.notices import NoticeConnection
from quotaplane.client.producer import HeldMessage, ThrottleAwareProducer
from quotaplane.client.pulsar_producer import ThrottleAwarePulsarProducer

__all__ = [
    "ClientMetrics",
    "HeldMessage",
    "NoticeConnection",
    "ProducerThrottledError",
    "ThrottleAwareProducer",
    "ThrottleAwarePulsarProducer",
    "default_metrics",
]
