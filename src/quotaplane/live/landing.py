"""Each round's rows landed for the batch pipeline and the streaming mode.

Every round writes one JSON Lines file per input its sources observed (`volumes/`, `membership/`,
`collection_errors/`, `partition_sizes/`, ...: the rows the readers' rules accept, in the telemetry
schemas of docs/telemetry.md, their fields in the schema's order) and one per decision table
(`storage_decisions/`), named `round-<n>.jsonl`, each under a temporary name (`.round-*.tmp`,
which Spark's file listing skips) then renamed: a reader sees a round whole or not at all, and
`quotaplane run`, `quotaplane stream` or `quotaplane forecast` over the landing directory sees
exactly what the service saw.

A round that cannot be written (a full disk, a read-only mount) stays queued and is written, in
order, before the next round's; the queue holds at most `budget_rows` rows, beyond which the oldest
rounds are given up and counted (`dropped_rounds`), so a landing directory that stays unwritable
costs bounded memory.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

DEFAULT_BUDGET_ROWS = 2_000_000


class Landing:
    def __init__(self, root: Path, budget_rows: int = DEFAULT_BUDGET_ROWS) -> None:
        self.root = root
        self.budget_rows = budget_rows
        self.pending: deque[tuple[int, Mapping[str, Sequence[Mapping[str, Any]]]]] = deque()
        self.pending_rows = 0
        self.dropped_rounds = 0

    def check_writable(self) -> None:
        from quotaplane.core.errors import ConfigError

        if self.root.exists() and not self.root.is_dir():
            raise ConfigError("--landing", str(self.root), "is not a directory")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError("--landing", str(self.root), f"cannot be created: {exc.strerror}") from None
        if not os.access(self.root, os.W_OK):
            raise ConfigError("--landing", str(self.root), "is not writable")

    def land(self, number: int, tables: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
        """Queue round `number` (rows by input or table name) and write every queued round in order;
        an `OSError` leaves the round that failed and those after it queued for the next call."""
        self.pending.append((number, tables))
        self.pending_rows += sum(len(rows) for rows in tables.values())
        while len(self.pending) > 1 and self.pending_rows > self.budget_rows:
            _, dropped = self.pending.popleft()
            self.pending_rows -= sum(len(rows) for rows in dropped.values())
            self.dropped_rounds += 1
        while self.pending:
            number, tables = self.pending[0]
            name = f"round-{number:010d}.jsonl"
            for kind, rows in tables.items():
                self._write(kind, name, rows)
            self.pending.popleft()
            self.pending_rows -= sum(len(rows) for rows in tables.values())

    def _write(self, kind: str, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        if not rows:
            return
        folder = self.root / kind
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{name}.tmp"
        try:
            with tmp.open("w", encoding="utf-8") as out:
                out.writelines(json.dumps(row) + "\n" for row in rows)
            os.replace(tmp, folder / name)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise


def read_back(root: Path, schemas: Mapping[str, Any], span_ms: int,
              warn: Any = None) -> list[tuple[int, int, dict[str, list[dict[str, Any]]]]]:
    """The landed rounds `(number, time, rows by input)` of the last `span_ms` (as of the newest
    landed round), oldest first, read with the reference readers (`schemas`: input name ->
    `RecordSchema`); a round with a file that cannot be read is skipped (`warn(text)`)."""
    from quotaplane.core.errors import InputError
    from quotaplane.core.telemetry_files import read_input

    if span_ms <= 0:
        return []
    numbers: set[int] = set()
    for name in schemas:
        folder = root / name
        if folder.is_dir():
            numbers.update(int(p.name[6:-6]) for p in folder.glob("round-*.jsonl") if p.name[6:-6].isdigit())
    out: list[tuple[int, int, dict[str, list[dict[str, Any]]]]] = []
    newest: int | None = None
    for number in sorted(numbers, reverse=True):
        name = f"round-{number:010d}.jsonl"
        rows: dict[str, list[dict[str, Any]]] = {}
        try:
            for kind, schema in schemas.items():
                path = root / kind / name
                if path.is_file():
                    rows[kind] = list(read_input(path, schema))
        except (InputError, OSError) as exc:
            if warn is not None:
                warn(f"skipped landed round {name}: {exc}")
            continue
        stamps = [r["ts"] for table in rows.values() for r in table if r.get("ts") is not None]
        if not stamps:
            continue
        newest = max(stamps) if newest is None else newest
        if max(stamps) <= newest - span_ms:
            break
        out.append((number, max(stamps), rows))
    return out[::-1]
