"""Small builders shared by the backlog tests."""

from __future__ import annotations

from typing import Any

from quotaplane.backlog.config import parse_backlog_policies
from quotaplane.backlog.engine.model import ResolvedQuotas, Snapshot

TOPIC = "persistent://t/ns/a"


def snap(ts: int = 100_000, sub: str = "s", size: int = 100, entries: int = 10, publish: int | None = 0,
         close: int | None = None, topic: str = TOPIC, parent: str | None = None) -> Snapshot:
    if entries == 0:
        publish = None
    return Snapshot(ts, topic, sub, size, entries, publish, close, parent)


def quotas(size_limit: int = -1, time_limit: int = -1, size_policy: str = "producer_request_hold",
           time_policy: str = "producer_request_hold") -> ResolvedQuotas:
    return ResolvedQuotas(size_limit, size_policy, "broker", time_limit, time_policy, "broker")


def policies(broker: dict[str, Any] | None = None, namespaces: dict[str, Any] | None = None,
             topics: dict[str, Any] | None = None):
    return parse_backlog_policies({"broker": broker or {}, "namespaces": namespaces or {},
                                   "topics": topics or {}})
