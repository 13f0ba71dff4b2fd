"""Policy configurations for a benchmark tier, written from the simulated fleet's own names.

The limits are chosen so that every policy has work to do on a healthy fleet: some volumes sit
between the soft and hard limits, the busiest clients and topics go over their quotas, and some
Pulsar backlogs exceed theirs. Each file has the format of the bundled example's config
(`examples/replication-fill/config/`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.tiers import SCENARIO, Tier
from quotaplane.core.policy import RunConfigs
from quotaplane.sim.model import ROLE_ADMIN, ROLE_PRODUCER, ClusterModel
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
    return RunConfigs(storage=storage, client_quotas=quotas, topics=topics, backlog_policies=backlog)
