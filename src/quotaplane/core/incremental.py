"""A policy evaluated incrementally, key by key, as telemetry arrives: the face `quotaplane stream`
sees (no pyspark here).

The streaming mode splits every policy's input by a key whose rows are evaluated independently of
every other key's (the storage cluster, the client-quota broker, the topic-quota broker, the backlog
topic). Each micro-batch hands a key its new rows and the event-time watermark; the policy keeps
whatever it has not decided yet in the key's state (which must pickle: it is carried between
micro-batches in the stream's checkpoint, never in the driver) and returns the rows it decided,
table by table, exactly the rows `quotaplane run` writes for the same telemetry.

Rows are dicts of the input's fields, typed as the telemetry readers type them (`time_ms` fields
as epoch milliseconds), plus `_file` (a hash of the file the row came from) and `_position`
(increasing with the row's place in its file). The watermark `W` promises that no row with an
event time below `W` will come any more (later rows that would are set aside as late by the
stream, before the policy sees them); `None` means the input has ended: decide everything.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

C = TypeVar("C")

#: column kinds of an output table (`timestamp_ms`: epoch ms in the rows, a timestamp in the table)
KINDS = ("long", "int", "double", "string", "boolean", "timestamp_ms")
#: the table of rows a policy quarantines itself, by rules over several rows (dicts with `input`,
#: `reason` and `row`), beside the rules of a single row the stream's reader applies
QUARANTINE = "_quarantine"


@dataclass(frozen=True)
class Column:
    name: str
    kind: str

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"column {self.name}: kind {self.kind!r} is not one of {KINDS}")


@dataclass(frozen=True)
class Table:
    """An output table: its name as `quotaplane run` writes it, and its columns in order."""

    name: str
    columns: tuple[Column, ...]


@dataclass
class Advance:
    """What one `advance` decided: rows per table name; `late`: rows the policy set aside because
    the unit they belong to was decided already (dicts with `input`, `reason` and `row`)."""

    tables: dict[str, list[dict[str, Any]]]
    late: list[dict[str, Any]]


class Incremental(ABC, Generic[C]):
    """One policy, incrementally (module docstring)."""

    #: the policy's name in the registry
    name: ClassVar[str]
    #: the telemetry inputs read; for each, the field holding the row's event time
    time_fields: ClassVar[Mapping[str, str]]
    #: the key fields (every input row has them)
    key: ClassVar[tuple[str, ...]]
    #: the tables written
    tables: ClassVar[tuple[Table, ...]]
    #: rows of another policy's table given to every key of this one (`table name`), see `advance`
    broadcast: ClassVar[str | None] = None
    #: per table, the column whose values the stream counts as outcomes (metrics: who is throttled,
    #: why), e.g. the topic decision or the backlog quota exceeded
    outcomes: ClassVar[Mapping[str, str]] = {}
    #: inputs whose rows naming no key (every key field null) belong to every key: the stream gives
    #: them to every key it knows (with the key's fields filled in), or to the null key if none
    unkeyed: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def new_state(self, config: C) -> Any:
        """The state of a key not seen before."""

    @abstractmethod
    def advance(self, config: C, state: Any, rows: Mapping[str, Sequence[dict[str, Any]]],
                watermark_ms: int | None) -> Advance:
        """Take the key's new rows (per input name; in no particular order), decide every unit that
        is final at `watermark_ms` (all of them when None) in event-time order, and return the rows
        decided. `state` is changed in place."""

    def output_tables(self, config: C) -> tuple[Table, ...]:
        """The tables written with this configuration (by default `tables`)."""
        return self.tables

    def decided_through(self, state: Any, watermark_ms: int | None) -> int | None:
        """The time before which every row of the key's tables has been returned (None: all of
        them). A policy whose rows another one is given (`broadcast`) says how far they are
        complete; by default, the watermark."""
        return watermark_ms
