"""Each round's telemetry landed for the batch pipeline and the streaming mode.

Every round writes one JSON Lines file per input (`volumes/`, `membership/`, `collection_errors/`,
and the forecast's `partition_sizes/`, its fields in the schema's order) in the telemetry schemas of
docs/telemetry.md, and the round's decision rows to `storage_decisions/`, each under a temporary
name (`.round-*.tmp`, which Spark's file listing skips) then renamed: a reader sees a round whole or
not at all, and `quotaplane run`, `quotaplane stream` or `quotaplane forecast` over the landing
directory sees exactly what the service saw.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from quotaplane.forecast.engine.replicas import ReplicaPoint
from quotaplane.storage.engine.rounds import Round


class Landing:
    def __init__(self, root: Path) -> None:
        self.root = root

    def check_writable(self) -> None:
        from quotaplane.core.errors import ConfigError

        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError("--landing", str(self.root), f"cannot be created: {exc.strerror}") from None
        if not os.access(self.root, os.W_OK):
            raise ConfigError("--landing", str(self.root), "is not writable")

    def _write(self, kind: str, name: str, rows: Sequence[Mapping[str, Any]], sort_keys: bool = True) -> None:
        if not rows:
            return
        folder = self.root / kind
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{name}.tmp"
        with tmp.open("w", encoding="utf-8") as out:
            for row in rows:
                out.write(json.dumps(row, sort_keys=sort_keys) + "\n")
        os.replace(tmp, folder / name)

    def land(self, number: int, rd: Round, decisions: Sequence[Mapping[str, Any]],
             replicas: Sequence[ReplicaPoint] = ()) -> None:
        """Round `number` as the telemetry inputs (with the partition replica sizes it observed)
        and its decision rows."""
        name = f"round-{number:010d}.jsonl"
        base = {"ts": rd.ts, "cluster": rd.cluster, "poll_id": rd.poll_id}
        self._write("volumes", name, [
            {**base, "broker_id": v.broker_id, "log_dir": v.log_dir, "total_bytes": v.total_bytes,
             "available_bytes": v.available_bytes} for v in rd.volumes])
        if rd.members is not None:
            self._write("membership", name, [{**base, "broker_id": b} for b in sorted(rd.members)])
        if rd.error is not None:
            self._write("collection_errors", name, [{**base, "reason": rd.error}])
        self._write("partition_sizes", name, [r.as_record() for r in replicas], sort_keys=False)
        self._write("storage_decisions", name, list(decisions))
