"""A minimal incremental policy for testing the stream's machinery: every row decided as it is."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from quotaplane.core.incremental import Advance, Column, Incremental, Table
from quotaplane.core.policy import Input
from quotaplane.core.records import Field, RecordSchema

EVENTS = RecordSchema("events", (Field("ts", "time_ms"), Field("k", "string"), Field("v", "double")))
INPUT = Input("events", EVENTS, "test events")
TABLE = Table("echo", (Column("k", "string"), Column("ts", "timestamp_ms"), Column("ts_ms", "long"),
                       Column("v", "double"), Column("seen", "long")))


class Echo(Incremental[None]):
    """A row is final when its ts is below the watermark; `seen` counts the key's rows decided
    before it (sequential state carried across micro-batches)."""

    name = "echo"
    time_fields: ClassVar[dict[str, str]] = {"events": "ts"}
    key = ("k",)
    tables = (TABLE,)

    def new_state(self, config: None) -> dict[str, Any]:
        return {"pending": [], "seen": 0}

    def advance(self, config: None, state: dict[str, Any], rows: Mapping[str, Sequence[dict[str, Any]]],
                watermark_ms: int | None) -> Advance:
        state["pending"].extend(rows.get("events", ()))
        state["pending"].sort(key=lambda r: (r["ts"], r["_file"], r["_position"]))
        final = [r for r in state["pending"] if watermark_ms is None or r["ts"] < watermark_ms]
        state["pending"] = state["pending"][len(final):]
        out = []
        for r in final:
            out.append({"k": r["k"], "ts": r["ts"], "ts_ms": r["ts"], "v": r["v"], "seen": state["seen"]})
            state["seen"] += 1
        return Advance({"echo": out}, [])

    def decided_through(self, state: dict[str, Any], watermark_ms: int | None) -> int | None:
        if watermark_ms is None:
            return None
        return min([watermark_ms, *(r["ts"] for r in state["pending"])])
