"""Policy configurations for a benchmark tier, written from the simulated fleet's own names.

The limits are chosen so that every policy has work to do on a healthy fleet: some volumes sit
between the soft and hard limits, the busiest clients and topics go over their quotas, some
Pulsar backlogs exceed theirs, and the largest Pulsar publish requests breach topic, resource-group,
broker and publish-buffer limits. Each file has the format of the bundled example's config
(`examples/replication-fill/config/`).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.tiers import SCENARIO, Tier
from quotaplane.core.policy import RunConfigs
from quotaplane.notices.records import namespace_of, normalise_topic, partitioned_topic
from quotaplane.sim.model import ROLE_ADMIN, ROLE_PRODUCER, ClusterModel
from quotaplane.sim.producers import derived_traffic
from quotaplane.sim.rng import Fields
from quotaplane.sim.run import resolve

MIB = 1 << 20
INT_MAX = 2**31 - 1


def storage_properties(model: ClusterModel) -> str:
    """Cluster volume source, per-volume ratio limits inside the fleet's 20-60 % fill band."""
    return "\n".join([
        "# Storage volume quotas for a benchmark fleet (cluster volume source).",
        "client.quota.callback.static.storage.volume.source=cluster",
        f"client.quota.callback.static.storage.check-interval={model.interval_ms}",
        "client.quota.callback.static.storage.perVolumeLimit.availableRatioBelow.soft=0.5",
        "client.quota.callback.static.storage.perVolumeLimit.availableRatioBelow.hard=0.35",
        "client.quota.callback.static.fallback.throttle.factor=0.5",
        f"client.quota.callback.static.produce={10 * MIB}",
        "",
    ])


def client_quotas(model: ClusterModel) -> list[dict[str, Any]]:
    """Defaults for every user and client id, a quota per user, and one per tenth producer."""
    entries: list[dict[str, Any]] = [
        {"entity": {"user": "<default>"},
         "quotas": {"producer_byte_rate": 2 * MIB, "consumer_byte_rate": 4 * MIB, "request_percentage": 200}},
        {"entity": {"client-id": "<default>"}, "quotas": {"controller_mutation_rate": 10}},
    ]
    users = sorted(set(model.clients.user))
    for i, user in enumerate(users):
        entries.append({"entity": {"user": user},
                        "quotas": {"producer_byte_rate": (1 + i % 4) * MIB,
                                   "consumer_byte_rate": (2 + i % 3) * MIB}})
    producers = [i for i, role in enumerate(model.clients.role) if role == ROLE_PRODUCER]
    for i in producers[::10]:
        entries.append({"entity": {"user": model.clients.user[i], "client-id": model.clients.client_id[i]},
                        "quotas": {"producer_byte_rate": MIB // 2}})
    admins = [i for i, role in enumerate(model.clients.role) if role == ROLE_ADMIN]
    if admins:
        entries.append({"entity": {"client-id": model.clients.client_id[admins[0]]},
                        "quotas": {"controller_mutation_rate": 2}})
    return entries


def topics_properties(model: ClusterModel) -> str:
    """A per-broker total, explicit thresholds for the five busiest topics, default shares for the rest.

    `message.max.bytes` is the largest INT: a simulated request row carries several seconds of a
    client's record batches (docs/simulator.md), so no row is an error for its size alone.
    """
    order = sorted(range(len(model.topics)), key=lambda t: -float(model.topics.base_rate[t]))
    lines = ["# Topic bytes-in quotas for a benchmark fleet.",
             f"total.bytes.in.per.sec.threshold={4 * MIB}",
             f"message.max.bytes={INT_MAX}"]
    lines += [f"topic.{model.topics.names[t]}.bytes.in.per.sec.threshold={MIB // 4}" for t in order[:5]]
    return "\n".join([*lines, ""])


def backlog_policies(model: ClusterModel) -> dict[str, Any]:
    """Broker defaults, a size and an age quota per namespace (alternating policies), one topic quota."""
    policies = ("consumer_backlog_eviction", "producer_request_hold", "producer_exception")
    namespaces = sorted({t.name.removeprefix("persistent://").rsplit("/", 1)[0] for t in model.pulsar})
    document: dict[str, Any] = {
        "broker": {"backlogQuotaDefaultLimitBytes": 1 << 30, "backlogQuotaDefaultLimitSecond": 3600,
                   "backlogQuotaDefaultRetentionPolicy": "producer_request_hold",
                   "backlogQuotaCheckIntervalInSeconds": model.backlog_check_ms // 1000,
                   "preciseTimeBasedBacklogQuotaCheck": False,
                   "exposeTopicLevelMetricsInPrometheus": True,
                   "clusterName": model.cluster},
        "namespaces": {ns: {"destination_storage": {"limitSize": 64 * MIB, "policy": policies[i % 3]},
                            "message_age": {"limitTime": 300, "policy": policies[(i + 1) % 3]}}
                       for i, ns in enumerate(namespaces)},
        "topics": {},
    }
    if model.pulsar:
        document["topics"][model.pulsar[0].name] = {
            "destination_storage": {"limitSize": 16 * MIB, "policy": "consumer_backlog_eviction"}}
    return document


@dataclass(frozen=True)
class TopicLoad:
    """A partitioned topic of `producer_traffic`: the mean size of one publish request of a partition."""

    topic: str
    namespace: str
    request_bytes: float
    request_messages: float


def topic_loads(model: ClusterModel, seed: int) -> list[TopicLoad]:
    """The producers' topics (the scenario's, else derived from its Pulsar topics), largest requests first."""
    traffic = model.producers if model.producers is not None else derived_traffic(model, Fields(seed))
    sizes: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for p in traffic.producers:
        sizes[partitioned_topic(normalise_topic(p.topic))].append((p.message_bytes * p.messages, p.messages))
    loads = [TopicLoad(t, namespace_of(t), sum(b for b, _ in v) / len(v), sum(m for _, m in v) / len(v))
             for t, v in sizes.items()]
    return sorted(loads, key=lambda t: (-t.request_bytes, t.topic))


def notices_properties(model: ClusterModel, seed: int) -> str:
    """Publish-rate limits sized on the traffic's publish requests, so that notices of four reasons occur.

    A derived producer publishes one request a minute (`requests_per_client_per_minute`), so a request
    carries about 60 s of its partition's bytes, while a token bucket holds one second of its rate
    (capacity = rate, docs/notices.md): a bucket that has refilled since the last request is breached by
    a request at least as large as its rate. So the limits are set from the mean request of a partition
    (`TopicLoad`), not from mean byte rates, and each one is breached by the requests above it (the busy
    half of the daily cycle and the noise around it):
    - topic policies: the two topics with the largest requests, each at its own mean request bytes
      (`TopicProduceQuotaExceeded`);
    - a namespace policy: the namespace with the most topics, at the median of the fleet's mean messages
      per request as its message rate (`TopicProduceQuotaExceeded`, for each of its topics);
    - a resource group: the next three topics outside both, sharing the mean request bytes of its
      largest member (`ResourceGroupProduceQuotaExceeded`);
    - the broker rate: the mean request bytes of the third largest topic (`BrokerProduceQuotaExceeded`:
      a request of any topic above it, or a smaller one while the broker's bucket is still refilling);
    - the publish buffer: two IO threads sharing twice the mean request bytes of the largest topic, so
      the largest topic's busy-hour requests overflow a thread's half (`MessageBufferSizeBreach`);
    - the pending-request limit stays at Pulsar's default (1000): with a request a minute per producer
      and a few milliseconds to persist it, a connection never has more than a few pending.
    """
    loads = topic_loads(model, seed)
    lines = ["# Producer throttle notices (PIP-385) for a benchmark fleet: docs/notices.md.",
             "throttleProducerReceiptWaitTimeMillis=100",
             "quotaplane.notices.pauseRule=token-bucket"]
    if not loads:
        return "\n".join([*lines, ""])
    io_threads = 2
    buffer_mb = max(1, math.ceil(io_threads * loads[0].request_bytes / MIB))
    broker = loads[min(2, len(loads) - 1)]
    lines += [f"brokerPublisherThrottlingMaxByteRate={_rate(broker.request_bytes)}",
              f"maxMessagePublishBufferSizeInMB={buffer_mb}",
              f"numIOThreads={io_threads}"]
    limited = loads[:2]
    lines += [f"topic.{_key(t.topic)}.publishMaxByteRate={_rate(t.request_bytes)}" for t in limited]
    by_namespace: dict[str, int] = defaultdict(int)
    for t in loads:
        by_namespace[t.namespace] += 1
    namespace = min(by_namespace, key=lambda n: (-by_namespace[n], n))
    messages = sorted(t.request_messages for t in loads)[len(loads) // 2]
    lines.append(f"namespace.{namespace}.publishMaxMessageRate={_rate(messages)}")
    taken = {t.topic for t in limited}
    group = [t for t in loads if t.topic not in taken and t.namespace != namespace][:3]
    if group:
        lines += [f"resourcegroup.benchmark-group.publishRateInBytes={_rate(group[0].request_bytes)}",
                  f"resourcegroup.benchmark-group.topics={','.join(_key(t.topic) for t in group)}"]
    return "\n".join([*lines, ""])


def _key(topic: str) -> str:
    """A topic inside a properties key: its short name, or its full name with `:` escaped."""
    return topic.removeprefix("persistent://").replace(":", "\\:")


def _rate(value: float) -> int:
    return max(1, round(value))


def write(tier: Tier, scale: float, folder: Path) -> RunConfigs:
    """Write every policy's configuration for `tier` at `scale` into `folder`."""
    found, params = resolve(SCENARIO, tier.overrides(scale))
    model = found.build(params)
    folder.mkdir(parents=True, exist_ok=True)
    storage = folder / "storage.properties"
    storage.write_text(storage_properties(model), encoding="utf-8")
    quotas = folder / "client-quotas.json"
    quotas.write_text(json.dumps(client_quotas(model), indent=1) + "\n", encoding="utf-8")
    topics = folder / "topics.properties"
    topics.write_text(topics_properties(model), encoding="utf-8")
    backlog = folder / "backlog-policies.json"
    backlog.write_text(json.dumps(backlog_policies(model), indent=1) + "\n", encoding="utf-8")
    notices = folder / "notices.properties"
    notices.write_text(notices_properties(model, params.seed), encoding="utf-8")
    return RunConfigs(storage=storage, client_quotas=quotas, topics=topics, backlog_policies=backlog,
                      notices=notices)
