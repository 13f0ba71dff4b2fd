"""Where the live service's rounds come from: each source observes the telemetry inputs it can see
in a round, as rows in the schemas of docs/telemetry.md (`Observation`).

A source never raises for what it observes or for a peer that fails: a failure is a reason in
`Observation.errors` (and, where the spec says so, a `collection_errors` row), and the round goes on
with what the other sources saw. `Source.observe` returns None only when a finite source (a replay)
has no round left.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from quotaplane.core.live import Outcome


@dataclass
class Observation:
    """What one source saw in a round: rows by input name, and the failures it met (one line each,
    `"<REASON>: <message>"`). `ts_ms` and `cluster` are the round's time and cluster when the
    source sets them (a replayed round's own), else None (the service's clock and `--cluster`)."""

    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    ts_ms: int | None = None
    cluster: str | None = None


class Source(Protocol):
    """A source of the live service's rounds."""

    name: str
    inputs: tuple[str, ...]  # the telemetry inputs it observes

    def observe(self, number: int, now_ms: int, last: Mapping[str, Outcome]) -> Observation | None:
        """Round `number` at `now_ms`; `last` holds the previous round's outcomes by policy name."""
        ...

    def close(self) -> None:
        ...
