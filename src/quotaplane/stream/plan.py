"""What a stream runs: the configured policies that have an incremental form, in run order."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from quotaplane.core.errors import ConfigError
from quotaplane.core.incremental import Incremental
from quotaplane.core.policy import Input, Policy, RunConfigs, order


@dataclass(frozen=True)
class Streamed:
    """A policy of the stream: its incremental form, its configuration and its inputs."""

    policy: Incremental[Any]
    config: Any
    inputs: tuple[Input, ...]


def streamed_policies(policies: Sequence[Policy[Any]], configs: RunConfigs) -> list[Streamed]:
    """The configured policies that stream, in the order the runner runs them (storage before the
    client quotas, which are given its decisions)."""
    ordered = order(policies)
    from quotaplane.core.runner import load_configs

    loaded = load_configs(ordered, configs)
    out = []
    for policy in ordered:
        if loaded[policy.name] is None or policy.incremental is None:
            continue
        names = set(policy.incremental.time_fields)
        out.append(Streamed(policy.incremental, loaded[policy.name],
                            tuple(i for i in policy.inputs if i.name in names)))
    if not out:
        raise ConfigError("stream", "no policy",
                          "give at least one of --config, --client-quotas, --topic-config, "
                          "--backlog-policies")
    return out
