"""Which quota is in force for a topic: topic over namespace over broker, per quota type.

spec: Backlog Quota ("The quota can also be specified directly for all topics in a given namespace
using the namespace policy, or a specific topic using a topic policy"). The partitions of a
partitioned topic use the partitioned topic's policies (Pulsar keys topic policies by the
partitioned topic name).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, partial

from quotaplane.backlog.config import DESTINATION_STORAGE, MESSAGE_AGE, BacklogPolicies, Quota
from quotaplane.backlog.engine.model import ResolvedQuotas
from quotaplane.backlog.names import namespace_of


def policy_topic(topic: str, partitioned_topic: str | None) -> str:
    """The name topic-level policies are looked up under."""
    return partitioned_topic if partitioned_topic is not None else topic


def resolve_quota(policies: BacklogPolicies, topic: str, partitioned_topic: str | None,
                  quota_type: str) -> tuple[Quota, str]:
    """The quota of one type in force for `topic`, and the level it comes from."""
    topic_set = policies.topics.get(policy_topic(topic, partitioned_topic))
    if topic_set is not None and topic_set.get(quota_type) is not None:
        return topic_set.get(quota_type), "topic"  # type: ignore[return-value]
    ns_set = policies.namespaces.get(namespace_of(topic))
    if ns_set is not None and ns_set.get(quota_type) is not None:
        return ns_set.get(quota_type), "namespace"  # type: ignore[return-value]
    return policies.broker.default_quotas.get(quota_type), "broker"  # type: ignore[return-value]


def resolve(policies: BacklogPolicies, topic: str, partitioned_topic: str | None = None) -> ResolvedQuotas:
    """Both quotas in force for `topic`."""
    size, size_level = resolve_quota(policies, topic, partitioned_topic, DESTINATION_STORAGE)
    time, time_level = resolve_quota(policies, topic, partitioned_topic, MESSAGE_AGE)
    return ResolvedQuotas(size.limit, size.policy, size_level, time.limit, time.policy, time_level)


def resolver(policies: BacklogPolicies) -> Callable[[str, str | None], ResolvedQuotas]:
    """`resolve` under `policies`, each (topic, partitioned topic) resolved once."""
    return cache(partial(resolve, policies))
