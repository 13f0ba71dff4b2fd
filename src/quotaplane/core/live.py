"""What a policy gives the live service (`quotaplane serve`): the inputs it decides on live, and a
decider that turns each round's observed rows into its decisions.

Every round the service collects rows from its sources in the telemetry schemas of
docs/telemetry.md (`Observed.rows`: the same rows it lands, so that `quotaplane run` and
`quotaplane stream` over the landing directory decide exactly as the round did), then hands them
to the decider of every policy that has a `LivePart` and whose inputs a source observes, in
registry order: a decider reads the outcomes of the deciders before it (the client quotas read the
storage factor). The outcomes go to the service's sinks: enforcement, notices, the landing
directory, the endpoints and `/metrics`.

The service checks every observed row with the readers' own rules (`screen`) before any decider
reads it, so a row the batch readers would quarantine is left out live too, counted by its reason,
and the round decides on the rest; the rows land as observed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from quotaplane.core.errors import InputError
from quotaplane.core.records import RecordSchema

Row = Mapping[str, Any]


@dataclass(frozen=True)
class Observed:
    """One round as the service's sources saw it: its number, time and cluster, and the rows of
    every input observed (input name -> rows, docs/telemetry.md)."""

    number: int
    ts_ms: int
    cluster: str
    rows: Mapping[str, Sequence[Row]]

    def of(self, name: str) -> Sequence[Row]:
        return self.rows.get(name, ())


@dataclass
class Outcome:
    """What one decider made of a round.

    `tables`: the round's decision rows by table (landed as `<table>/round-<n>.jsonl`); `document`:
    what its endpoint serves (JSON); `log`: fields for the round's log line; `value`: what later
    deciders and the sinks read (the storage decider's `Decision`).
    """

    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    document: Any = None
    log: dict[str, Any] = field(default_factory=dict)
    value: Any = None


class Decider(Protocol):
    """A policy's live decisions, round after round (it keeps what it needs across rounds)."""

    def decide(self, observed: Observed, before: Mapping[str, Outcome]) -> Outcome:
        """The round's outcome; `before` holds the outcomes of the deciders that ran before it in
        this round, by policy name."""
        ...

    def warm(self, observed: Observed) -> None:
        """Take an earlier round (replayed from a landing directory or recorded telemetry after a
        restart) into what it keeps, with no effect outside."""
        ...

    def metrics(self) -> Iterable[Any]:
        """Its Prometheus metric families as of its last outcome (read at every scrape)."""
        ...


@dataclass(frozen=True)
class LivePart:
    """How a policy takes part in the live service.

    `inputs`: the telemetry inputs it decides on; it runs when a source observes any of them.
    `memory_ms(config)`: how far back its decisions look (the restart refills it from the landing
    directory over that span; 0: no memory). `endpoint`: the path its document is served at.
    `build(configs)`: its decider, from the loaded configuration of every policy (policy name ->
    what its `load_config` gave, None when not configured); None when it cannot run without one."""

    inputs: tuple[str, ...]
    endpoint: str
    build: Callable[[Mapping[str, Any]], Decider | None]
    memory_ms: Callable[[Any], int] = lambda _config: 0


def screen(schema: RecordSchema, rows: Iterable[Row]) -> tuple[list[dict[str, Any]], Counter[str]]:
    """The rows that pass the readers' type and row rules (`RecordSchema.coerce_record`), typed,
    and the others counted by `"<input>: <rule>"` (the rule names its field, or is prefixed by it)."""
    kept: list[dict[str, Any]] = []
    rejected: Counter[str] = Counter()
    for row in rows:
        try:
            kept.append(schema.coerce_record(row, schema.name))
        except InputError as exc:
            rule = exc.rule if exc.field in exc.rule else f"{exc.field}: {exc.rule}"
            rejected[f"{schema.name}: {rule}"] += 1
    return kept, rejected
