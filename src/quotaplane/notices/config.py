"""Configuration of producer throttle notices, in Pulsar's own names (docs/notices.md, Configuration).

A `.properties` file:

    brokerPublisherThrottlingMaxByteRate=0             # broker.conf; 0 or absent: unlimited
    brokerPublisherThrottlingMaxMessageRate=0
    maxPendingPublishRequestsPerConnection=1000        # Pulsar's default
    maxMessagePublishBufferSizeInMB=0                  # 0: no buffer limit
    numIOThreads=1
    throttleProducerReceiptWaitTimeMillis=100          # PIP-385's default
    topic.public/default/orders.publishMaxByteRate=1000000
    namespace.public/default.publishMaxMessageRate=500
    resourcegroup.rg1.publishRateInBytes=2000000
    resourcegroup.rg1.topics=public/default/a,public/default/b
    quotaplane.notices.pauseRule=token-bucket          # or rest-of-second

Sources: Pulsar `ServiceConfiguration` (broker settings and their defaults), `PublishRate` (topic and
namespace policies; the topic's replaces the namespace's), `ResourceGroup` (`publishRateInBytes`,
`publishRateInMsgs`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from quotaplane.core.errors import ConfigError, ConfigErrors
from quotaplane.core.properties import closest_name, load_properties, long_value
from quotaplane.notices.records import (
    TOPIC_RULE,
    is_legal_topic,
    namespace_of,
    normalise_topic,
    partitioned_topic,
)

# A rate times one second of nanoseconds must fit in a Java long (docs/notices.md, Configuration).
MAX_RATE = (2**63 - 1) // 1_000_000_000
INT_MAX = 2**31 - 1

BROKER_BYTE_RATE = "brokerPublisherThrottlingMaxByteRate"
BROKER_MESSAGE_RATE = "brokerPublisherThrottlingMaxMessageRate"
MAX_PENDING = "maxPendingPublishRequestsPerConnection"
MAX_BUFFER_MB = "maxMessagePublishBufferSizeInMB"
IO_THREADS = "numIOThreads"
RECEIPT_WAIT = "throttleProducerReceiptWaitTimeMillis"
PAUSE_RULE = "quotaplane.notices.pauseRule"
PAUSE_RULES = ("token-bucket", "rest-of-second")

DEFAULT_MAX_PENDING = 1000
DEFAULT_RECEIPT_WAIT_MS = 100
KNOWN_KEYS = (BROKER_BYTE_RATE, BROKER_MESSAGE_RATE, MAX_PENDING, MAX_BUFFER_MB, IO_THREADS, RECEIPT_WAIT,
              PAUSE_RULE)
_POLICY_KEYS = {"publishMaxByteRate": "bytes_per_s", "publishMaxMessageRate": "messages_per_s"}
_GROUP_KEYS = {"publishRateInBytes": "bytes_per_s", "publishRateInMsgs": "messages_per_s"}
KEY_PATTERNS = ("topic.<topic>.publishMaxByteRate|publishMaxMessageRate",
                "namespace.<tenant/ns>.publishMaxByteRate|publishMaxMessageRate",
                "resourcegroup.<name>.publishRateInBytes|publishRateInMsgs|topics")


@dataclass(frozen=True)
class PublishRate:
    """A publish-rate limit; 0 in a field means that field is unlimited (Pulsar's `PublishRate`)."""

    bytes_per_s: int = 0
    messages_per_s: int = 0

    @property
    def limited(self) -> bool:
        return self.bytes_per_s > 0 or self.messages_per_s > 0


@dataclass(frozen=True)
class NoticeConfig:
    """The validated configuration. Topic keys are full topic names (`normalise_topic`)."""

    broker_rate: PublishRate = PublishRate()
    max_pending_requests: int = DEFAULT_MAX_PENDING
    max_buffer_mb: int = 0
    io_threads: int = 1
    receipt_wait_ms: int = DEFAULT_RECEIPT_WAIT_MS
    pause_rule: str = "token-bucket"
    topic_rates: Mapping[str, PublishRate] = field(default_factory=dict)
    namespace_rates: Mapping[str, PublishRate] = field(default_factory=dict)
    group_rates: Mapping[str, PublishRate] = field(default_factory=dict)
    group_topics: Mapping[str, str] = field(default_factory=dict)  # full topic name -> group

    def topic_rate(self, topic: str) -> PublishRate | None:
        """The publish-rate policy of a topic (partition): its partitioned topic's, else its namespace's."""
        name = partitioned_topic(normalise_topic(topic))
        rate = self.topic_rates.get(name)
        if rate is None:
            rate = self.namespace_rates.get(namespace_of(name))
        return rate if rate is not None and rate.limited else None

    def resource_group(self, topic: str) -> tuple[str, PublishRate] | None:
        """The resource group of a topic (partition) and its rate, when it has a limited one."""
        group = self.group_topics.get(partitioned_topic(normalise_topic(topic)))
        if group is None:
            return None
        rate = self.group_rates.get(group, PublishRate())
        return (group, rate) if rate.limited else None

    @property
    def max_pending_bytes_per_thread(self) -> int:
        """`ServerCnx.maxPendingBytesPerThread`: the buffer split over the IO threads (0: no limit)."""
        return self.max_buffer_mb * 1024 * 1024 // self.io_threads


def load_notice_config(path: str | Path) -> NoticeConfig:
    """Load and validate a notices `.properties` file."""
    return parse_notice_config(load_properties(path))


def parse_notice_config(props: Mapping[str, str]) -> NoticeConfig:
    """Validate properties; every problem found is reported at once (`ConfigErrors`)."""
    errors: list[ConfigError] = []

    def number(key: str, default: int, lo: int, hi: int) -> int:
        raw = props.get(key)
        if raw is None:
            return default
        try:
            return long_value(key, raw, lo, hi)
        except ConfigError as exc:
            errors.append(exc)
            return default

    broker = PublishRate(number(BROKER_BYTE_RATE, 0, 0, MAX_RATE),
                         number(BROKER_MESSAGE_RATE, 0, 0, MAX_RATE))
    max_pending = number(MAX_PENDING, DEFAULT_MAX_PENDING, 0, INT_MAX)
    buffer_mb = number(MAX_BUFFER_MB, 0, 0, (2**63 - 1) // (1024 * 1024))
    io_threads = number(IO_THREADS, 1, 1, INT_MAX)
    wait = number(RECEIPT_WAIT, DEFAULT_RECEIPT_WAIT_MS, 0, 2**63 - 1)
    pause_rule = props.get(PAUSE_RULE, "token-bucket").strip()
    if pause_rule not in PAUSE_RULES:
        errors.append(ConfigError(PAUSE_RULE, pause_rule, f"must be one of {', '.join(PAUSE_RULES)}"))

    topics: dict[str, dict[str, int]] = {}
    namespaces: dict[str, dict[str, int]] = {}
    groups: dict[str, dict[str, int]] = {}
    group_topics: dict[str, str] = {}
    for key, raw in props.items():
        if key in KNOWN_KEYS:
            continue
        scope, _, rest = key.partition(".")
        name, _, setting = rest.rpartition(".")
        if scope == "topic" and setting in _POLICY_KEYS and name:
            if not is_legal_topic(name):
                errors.append(ConfigError(key, raw, TOPIC_RULE))
                continue
            topics.setdefault(normalise_topic(name), {})[_POLICY_KEYS[setting]] = number(key, 0, 0, MAX_RATE)
        elif scope == "namespace" and setting in _POLICY_KEYS and _is_namespace(name):
            namespaces.setdefault(name, {})[_POLICY_KEYS[setting]] = number(key, 0, 0, MAX_RATE)
        elif scope == "resourcegroup" and setting in _GROUP_KEYS and name:
            groups.setdefault(name, {})[_GROUP_KEYS[setting]] = number(key, 0, 0, MAX_RATE)
        elif scope == "resourcegroup" and setting == "topics" and name:
            groups.setdefault(name, {})
            _group_topics(key, raw, name, group_topics, errors)
        else:
            hint = closest_name(key, KNOWN_KEYS)
            errors.append(ConfigError(key, raw, "unknown property",
                                      f"did you mean {hint}?" if hint else
                                      f"known: {', '.join(KNOWN_KEYS)}, {', '.join(KEY_PATTERNS)}"))
    if errors:
        raise ConfigErrors(errors)
    return NoticeConfig(
        broker_rate=broker, max_pending_requests=max_pending, max_buffer_mb=buffer_mb, io_threads=io_threads,
        receipt_wait_ms=wait, pause_rule=pause_rule,
        topic_rates={t: PublishRate(**v) for t, v in topics.items()},
        namespace_rates={n: PublishRate(**v) for n, v in namespaces.items()},
        group_rates={g: PublishRate(**v) for g, v in groups.items()},
        group_topics=group_topics)


def _group_topics(key: str, raw: str, group: str, group_topics: dict[str, str],
                  errors: list[ConfigError]) -> None:
    for item in (t.strip() for t in raw.split(",")):
        if not item:
            continue
        if not is_legal_topic(item):
            errors.append(ConfigError(key, raw, f"{item!r}: {TOPIC_RULE}"))
            continue
        full = normalise_topic(item)
        other = group_topics.setdefault(full, group)
        if other != group:
            errors.append(ConfigError(key, raw, f"topic {full} is already in resource group {other}",
                                      "a topic belongs to one resource group"))


def _is_namespace(name: str) -> bool:
    """`tenant/ns`."""
    return name.count("/") == 1 and all(name.split("/"))
