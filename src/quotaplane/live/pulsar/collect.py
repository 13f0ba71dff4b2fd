"""One collection round from a Pulsar broker: the backlog telemetry of the watched namespaces.

Per round (`PulsarCollector.collect`): the broker's runtime configuration (its backlog-quota settings);
per namespace its persistent topics, its partitioned topics and its backlog quota map; per topic its
stats (the PIP-323 fields and each subscription's backlog, `getEarliestTimeInBacklog=true`), its internal
stats and its managed ledger's `internal-info` (each subscription's mark-delete position and the close
time of the ledger holding its oldest unacknowledged entry, which the estimate mode ages the backlog from) and
its topic-level backlog quota map (a partition's is its partitioned topic's: Pulsar keys topic policies
by the partitioned topic).

Nothing stops a round: a call that fails is a `PulsarError` in `Collection.errors` (one line each,
`PulsarError.line`) and the round goes on without what it would have given: a namespace that cannot be
listed (`NAMESPACE_NOT_FOUND` when it does not exist) contributes no topic; a topic whose stats cannot
be read (`TOPIC_NOT_FOUND` when it was deleted between the listing and its stats) contributes no row; a
topic whose internal stats, internal-info or quota map cannot be read keeps its rows without what they give
(the ledger close times; its topic-level quotas) and the error is recorded. System topics (`__change_events`,
transaction topics: Pulsar never holds them to a backlog quota) and non-durable subscriptions (readers:
not cursors of the managed ledger) are left out and counted in `Collection.skipped`.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from quotaplane.backlog.config import QuotaSet
from quotaplane.backlog.names import is_namespace_name
from quotaplane.core.errors import ConfigError
from quotaplane.live.pulsar import answers
from quotaplane.live.pulsar.admin import PulsarAdmin
from quotaplane.live.pulsar.model import Collection, PulsarError, TopicBacklog

T = TypeVar("T")
SYSTEM_TOPIC = "system topic"
NON_DURABLE = "non-durable subscription"
_PARTITION = "-partition-"


def is_system_topic(topic: str) -> bool:
    """Pulsar's system topics (`SystemTopicNames`): local names starting with `__` (`__change_events`,
    `__transaction_buffer_snapshot`, ...) and transaction pending-ack stores
    (`...__transaction_pending_ack`)."""
    local = topic.rsplit("/", 1)[-1]
    return local.startswith("__") or local.endswith("__transaction_pending_ack")


def parent_of(topic: str, partitioned: set[str]) -> str | None:
    """The partitioned topic `topic` is a partition of, when it is one of `partitioned`."""
    head, sep, index = topic.rpartition(_PARTITION)
    return head if sep and index.isdigit() and head in partitioned else None


def check_namespaces(namespaces: Sequence[str]) -> tuple[str, ...]:
    """The watched namespaces (`tenant/namespace`), each once, in the order given."""
    for ns in namespaces:
        if not is_namespace_name(ns):
            raise ConfigError("--pulsar-namespaces", ns, "each namespace must have the form tenant/namespace")
    if not namespaces:
        raise ConfigError("--pulsar-namespaces", "(none)", "watch at least one namespace")
    return tuple(dict.fromkeys(namespaces))


class PulsarCollector:
    """Collects `namespaces` through `admin`; `clock` (epoch ms) stamps each topic's read."""

    def __init__(self, admin: PulsarAdmin, namespaces: Sequence[str],
                 clock: Callable[[], int] = lambda: time.time_ns() // 1_000_000) -> None:
        self.admin = admin
        self.namespaces = check_namespaces(namespaces)
        self.clock = clock

    def collect(self, now_ms: int) -> Collection:
        """One round at `now_ms` (the `ts_ms` of its rows)."""
        errors: list[PulsarError] = []
        skipped: Counter[str] = Counter()
        broker = self._broker(errors)
        namespace_quotas: dict[str, QuotaSet] = {}
        topic_quotas: dict[str, QuotaSet] = {}
        topics: list[TopicBacklog] = []
        for ns in self.namespaces:
            listed = self._namespace(ns, namespace_quotas, errors)
            if listed is None:
                continue
            names, partitioned = listed
            for parent in sorted(partitioned):
                self._topic_quotas(parent, topic_quotas, errors)
            for topic in names:
                if is_system_topic(topic):
                    skipped[SYSTEM_TOPIC] += 1
                    continue
                parent = parent_of(topic, partitioned)
                read = self._topic(topic, parent, errors)
                if read is None:
                    continue
                if parent is None:
                    self._topic_quotas(topic, topic_quotas, errors)
                kept = tuple(s for s in read.subscriptions if s.durable)
                if len(kept) < len(read.subscriptions):
                    skipped[NON_DURABLE] += len(read.subscriptions) - len(kept)
                topics.append(read if len(kept) == len(read.subscriptions) else
                              TopicBacklog(**{**read.__dict__, "subscriptions": kept}))
        return Collection(now_ms, self.namespaces, broker, namespace_quotas, topic_quotas, tuple(topics),
                          dict(skipped), tuple(errors))

    def _broker(self, errors: list[PulsarError]) -> dict[str, str] | None:
        answer = self.admin.broker_configuration()
        settings = answer if isinstance(answer, PulsarError) else answers.broker_settings(answer)
        if isinstance(settings, PulsarError):
            errors.append(settings)
            return None
        return settings

    def _namespace(self, ns: str, quotas: dict[str, QuotaSet], errors: list[PulsarError]
                   ) -> tuple[list[str], set[str]] | None:
        where = f"namespace {ns}"
        listing = self.admin.topics(ns)
        names = listing if isinstance(listing, PulsarError) else answers.topic_list(listing, ns, where)
        if isinstance(names, PulsarError):
            errors.append(names.renamed("NAMESPACE_NOT_FOUND") if names.reason == "NOT_FOUND" else names)
            return None
        partitioned_answer = self.admin.partitioned_topics(ns)
        partitioned = (partitioned_answer if isinstance(partitioned_answer, PulsarError)
                       else answers.topic_list(partitioned_answer, ns, where))
        if isinstance(partitioned, PulsarError):
            errors.append(partitioned)
            partitioned = []
        quota_answer = self.admin.namespace_backlog_quotas(ns)
        quota = (quota_answer if isinstance(quota_answer, PulsarError)
                 else answers.quota_set(quota_answer, where))
        if isinstance(quota, PulsarError):
            errors.append(quota)
        else:
            quotas[ns] = quota
        return names, set(partitioned)

    def _topic_quotas(self, topic: str, quotas: dict[str, QuotaSet], errors: list[PulsarError]) -> None:
        answer = self.admin.topic_backlog_quotas(topic)
        quota = answer if isinstance(answer, PulsarError) else answers.quota_set(answer, f"topic {topic}")
        if isinstance(quota, PulsarError):
            errors.append(quota.renamed("TOPIC_NOT_FOUND") if quota.reason == "NOT_FOUND" else quota)
        elif quota.size is not None or quota.time is not None:
            quotas[topic] = quota

    @staticmethod
    def _read(answer: Any, parse: Callable[[Any, str], T | PulsarError], topic: str,
              errors: list[PulsarError]) -> T | None:
        value = answer if isinstance(answer, PulsarError) else parse(answer, f"topic {topic}")
        if isinstance(value, PulsarError):
            errors.append(value.renamed("TOPIC_NOT_FOUND") if value.reason == "NOT_FOUND" else value)
            return None
        return value

    def _topic(self, topic: str, parent: str | None, errors: list[PulsarError]) -> TopicBacklog | None:
        observed = self.clock()
        stats = self.admin.topic_stats(topic)
        if isinstance(stats, PulsarError):
            errors.append(stats.renamed("TOPIC_NOT_FOUND") if stats.reason == "NOT_FOUND" else stats)
            return None
        cursors = self._read(self.admin.internal_stats(topic), answers.cursor_positions, topic, errors)
        ledgers = self._read(self.admin.ledger_info(topic), answers.ledgers, topic, errors)
        if cursors is None or ledgers is None:
            ledgers, cursors = None, None
        read = answers.topic_backlog(stats, topic, parent, observed, ledgers, cursors)
        if isinstance(read, PulsarError):
            errors.append(read)
            return None
        return read
