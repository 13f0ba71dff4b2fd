"""The policies quotaplane knows, in the order `quotaplane --help` lists them and `run` reports them.

A new policy is one package (`quotaplane/<name>/`) whose `policy.py` defines its `Policy`; adding it
here is all the runner, the CLI and the live modes need (see docs/architecture.md).
"""

from __future__ import annotations

from typing import Any

from quotaplane.backlog.policy import BacklogPolicy
from quotaplane.clients.policy import ClientsPolicy
from quotaplane.core.policy import Input, Policy
from quotaplane.forecast.policy import ForecastPolicy
from quotaplane.notices.policy import NoticesPolicy
from quotaplane.storage.policy import StoragePolicy
from quotaplane.topics.policy import TopicsPolicy

POLICIES: tuple[Policy[Any], ...] = (StoragePolicy(), BacklogPolicy(), TopicsPolicy(), ClientsPolicy(),
                                     NoticesPolicy(), ForecastPolicy())


def policy(name: str) -> Policy[Any]:
    """The policy called `name`."""
    for p in POLICIES:
        if p.name == name:
            return p
    raise KeyError(name)


def all_inputs() -> list[Input]:
    """Every telemetry input of every policy, once each, in policy order."""
    seen: dict[str, Input] = {}
    for p in POLICIES:
        for item in p.inputs:
            seen.setdefault(item.name, item)
    return list(seen.values())
