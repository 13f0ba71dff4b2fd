"""Reading backlog snapshots from JSON Lines for the reference engine.

Each line is checked with the same type and row rules as the Spark reader
(`BACKLOG_SNAPSHOTS.coerce_record`), then the group rules: a subscription seen twice at one tick,
or rows of one (tick, topic) that disagree on `partitioned_topic`. The first bad line raises
`InputError` naming the file, the line, the field, the value and the rule. `group_reasons` gives
the group rules in the form `quotaplane run` applies them: rows quarantined, not a file rejected.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from quotaplane.backlog.engine.model import Snapshot
from quotaplane.backlog.records import BACKLOG_SNAPSHOTS, DUPLICATE_REASON, PARENT_CONFLICT_REASON
from quotaplane.core.errors import InputError
from quotaplane.core.jsonl import json_objects, read_lines


def parse_snapshots(lines: Iterable[bytes | str], source: str = "snapshots") -> Iterator[Snapshot]:
    """Snapshots of JSON Lines text (blank lines are skipped)."""
    seen: dict[tuple[int, str, str], int] = {}
    parents: dict[tuple[int, str], tuple[str | None, int]] = {}
    for number, where, record in json_objects(lines, source):
        s = Snapshot.from_record(BACKLOG_SNAPSHOTS.coerce_record(record, where))
        key = (s.ts_ms, s.topic, s.subscription)
        if key in seen:
            raise InputError(where, "subscription", s.subscription,
                             f"{DUPLICATE_REASON} (first at line {seen[key]})")
        seen[key] = number
        parent = parents.setdefault((s.ts_ms, s.topic), (s.partitioned_topic, number))
        if parent[0] != s.partitioned_topic:
            raise InputError(where, "partitioned_topic", s.partitioned_topic,
                             f"{PARENT_CONFLICT_REASON} (line {parent[1]} has {parent[0]!r})")
        yield s


def group_reasons(rows: Sequence[Snapshot]) -> list[str | None]:
    """The group rules over every row of one (tick, topic) that passed the row rules, as the Spark
    reader applies them (`spark.reader.with_group_rules`): each row of a subscription seen more than
    once gets `DUPLICATE_REASON`; when the rows (those included) disagree on `partitioned_topic`,
    every other row gets `PARENT_CONFLICT_REASON`; None: the row is used."""
    conflict = len({s.partitioned_topic for s in rows}) > 1
    if not conflict and len({s.subscription for s in rows}) == len(rows):
        return [None] * len(rows)  # the common case, without counting
    times = Counter(s.subscription for s in rows)
    return [DUPLICATE_REASON if times[s.subscription] > 1 else PARENT_CONFLICT_REASON if conflict else None
            for s in rows]


def read_snapshots(path: str | Path) -> list[Snapshot]:
    """All snapshots of a JSON Lines file."""
    return list(parse_snapshots(read_lines(path), Path(path).name))
