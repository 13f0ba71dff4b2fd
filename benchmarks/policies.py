"""What is benchmarked per policy: its Spark stage, its configuration, its inputs, and for each input
the key and time bucket the bare Spark job groups by (the grouping the policy itself evaluates by)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class InputSpec:
    """One telemetry input of a policy and the bare job's grouping for it."""

    kind: str
    time_col: str
    keys: tuple[str, ...]
    value_col: str
    bucket_ms: Callable[[dict[str, Any]], int]  # from the dataset's manifest


@dataclass(frozen=True)
class PolicySpec:
    """A policy pipeline: the registered policy `name`, its `RunConfigs` field and its inputs
    (the first is the main one: the reference engine's prefix is cut on its time column)."""

    name: str
    config_field: str
    inputs: tuple[InputSpec, ...]
    grouping: str  # what the policy evaluates per, for the docs

    @property
    def main(self) -> InputSpec:
        return self.inputs[0]

    def kinds(self) -> list[str]:
        return [i.kind for i in self.inputs]


def _round_ms(manifest: dict[str, Any]) -> int:
    return int(manifest["arguments"]["interval_seconds"]) * 1000


def _backlog_tick_ms(manifest: dict[str, Any]) -> int:
    return int(manifest["arguments"]["backlog_check_seconds"]) * 1000


SAMPLE_MS = 1_000  # quota.window.size.seconds (Kafka's default): one sample of the sampled rate
METER_TICK_MS = 5_000  # the bytes-in meter's tick
RATE_PERIOD_MS = 1_000  # the publish-rate token buckets' rate period (docs/notices.md)

POLICIES: dict[str, PolicySpec] = {p.name: p for p in (
    PolicySpec(
        "storage", "storage",
        (InputSpec("volumes", "ts", ("cluster", "poll_id"), "available_bytes", _round_ms),
         InputSpec("membership", "ts", ("cluster", "poll_id"), "broker_id", _round_ms),
         InputSpec("collection_errors", "ts", ("cluster", "poll_id"), "poll_id", _round_ms)),
        "collection round (cluster, poll id)"),
    PolicySpec(
        "clients", "client_quotas",
        (InputSpec("client_requests", "ts_ms", ("broker_id", "quota_type", "user", "client_id"), "value",
                   lambda _: SAMPLE_MS),),
        "broker, quota type, user and client id, per 1 s sample"),
    PolicySpec(
        "topics", "topics",
        (InputSpec("topic_requests", "ts_ms", ("broker_id", "topic"), "bytes", lambda _: METER_TICK_MS),),
        "broker and topic, per 5 s meter tick"),
    PolicySpec(
        "backlog", "backlog_policies",
        (InputSpec("backlog_snapshots", "ts_ms", ("topic",), "backlog_size_bytes", _backlog_tick_ms),),
        "topic, per check tick"),
    PolicySpec(
        "notices", "notices",
        (InputSpec("producer_traffic", "ts_ms", ("broker",), "bytes", lambda _: RATE_PERIOD_MS),),
        "broker, per 1 s"),
)}


def parse_policies(text: str) -> list[PolicySpec]:
    """`storage,clients,...` in the given order; an unknown name raises ValueError naming it."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in POLICIES]
    if unknown or not names:
        raise ValueError(f"--policies={text}: must name some of {', '.join(POLICIES)}"
                         + (f" ({unknown[0]!r} is not one)" if unknown else ""))
    return [POLICIES[n] for n in names]
