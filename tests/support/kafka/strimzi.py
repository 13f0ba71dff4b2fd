"""The Strimzi quotas plugin on the test brokers (`deploy/strimzi-quotas/pom.xml`; docs/real-kafka.md,
"The Strimzi quotas plugin"): the class path it adds and the broker properties that install it, with
the shipped plugin's property names (`StaticQuotaConfig` of io.strimzi:kafka-quotas-plugin 0.3.1,
whose sources equal 0.4.0's)."""

from __future__ import annotations

from collections.abc import Mapping

from tests.support.java_parts import classpath
from tests.support.kafka.node import Node

PART = "strimzi-quotas"
CALLBACK = "io.strimzi.kafka.quotas.StaticQuotaCallback"
PREFIX = "client.quota.callback.static."


def plugin_classpath() -> list[str]:
    return classpath(PART).split(":")


def plugin_properties(settings: Mapping[str, str]) -> dict[str, str]:
    """The cluster-wide properties: the callback class and `client.quota.callback.static.<key>` for
    each setting (`produce`, `storage.check-interval`, `storage.per.volume.limit.min.available.bytes`,
    `throttle.factor.validity.duration`, ...)."""
    return {"client.quota.callback.class": CALLBACK, **{PREFIX + k: v for k, v in settings.items()}}


def plugin_node_properties(node: Node, bootstrap: str) -> dict[str, str]:
    """Per node: the plugin reads `broker.id` from the raw configuration (KRaft has `node.id`; Kafka
    accepts both when they are equal), and its admin client needs the cluster's bootstrap servers."""
    return {"broker.id": str(node.node_id), PREFIX + "kafka.admin.bootstrap.servers": bootstrap}
