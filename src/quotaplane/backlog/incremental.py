"""Pulsar backlog quotas evaluated incrementally, one topic at a time (`quotaplane stream`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from quotaplane.backlog.config import BacklogPolicies
from quotaplane.backlog.engine.evaluate import next_tick
from quotaplane.backlog.engine.model import SIZE, TIME, ResolvedQuotas, Snapshot
from quotaplane.backlog.engine.reader import group_reasons
from quotaplane.backlog.engine.resolve import resolver
from quotaplane.backlog.engine.tables import CHECK_COLUMNS, EVICTION_COLUMNS, check_row, eviction_rows
from quotaplane.core.incremental import QUARANTINE, Advance, Column, Incremental, Table

INPUT = "backlog_snapshots"
CHECKS = "backlog_checks"
EVICTIONS = "backlog_evictions"
#: the rows the group rules set aside (`{input, reason, row}`), routed by the driver to the quarantine
LATE_REASON = "backlog check tick already decided (ts_ms below the time the topic was decided through)"

_STRING = {"topic", "namespace", "partitioned_topic", "oldest_subscription", "size_policy", "time_policy",
           "size_level", "time_level", "exceeded", "action", "producers", "quota_type", "subscription"}


def _columns(names: Sequence[str]) -> tuple[Column, ...]:
    kinds = {"eviction_run": "boolean"}
    return tuple(Column(n, kinds.get(n, "string" if n in _STRING else "long")) for n in names)


@dataclass
class BacklogState:
    """One topic's state: the rows of its undecided ticks (by `ts_ms`), its eviction runs so far per
    quota type, and the time before which every tick has been decided (None: nothing yet)."""

    pending: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=lambda: {SIZE: 0, TIME: 0})
    decided_before: int | None = None


class BacklogIncremental(Incremental[BacklogPolicies]):
    """The backlog-quota checks of one topic, tick by tick (docs/backlog.md, "The check of one topic
    at one tick", "Eviction" and "In the streaming mode").

    Key: the topic. Unit: a check tick of the topic, all its snapshot rows with one `ts_ms`
    (docs/backlog.md "Telemetry": each distinct `ts_ms` is one run of `monitorBacklogQuota`). A tick
    is final at watermark W when `ts_ms < W` (a row at W may still come); final ticks are decided in
    time order with the reference engine (`engine.evaluate.next_tick`), so the cumulative eviction
    counters (`size_evictions_total`, `time_evictions_total`) are carried in the state. When a tick
    becomes final the reader's group rules (`engine.reader.group_reasons`, the twin of
    `spark.reader.with_group_rules`) set aside its duplicate subscriptions, or all its rows when they
    disagree on `partitioned_topic`: those rows go to the `_quarantine` table, the others are
    decided. A row whose tick comes before the time the topic was decided through is late.

    State (`BacklogState`): the rows of ticks not yet final, the two counters, and that time; the
    quotas are resolved again at each tick. Decided ticks are dropped, so the state holds only the
    rows at or after the watermark.
    """

    name = "backlog"
    time_fields: ClassVar[Mapping[str, str]] = {INPUT: "ts_ms"}
    key = ("topic",)
    outcomes: ClassVar[Mapping[str, str]] = {CHECKS: "exceeded", EVICTIONS: "quota_type"}
    tables = (Table(CHECKS, _columns(CHECK_COLUMNS)), Table(EVICTIONS, _columns(EVICTION_COLUMNS)))

    def new_state(self, config: BacklogPolicies) -> BacklogState:
        return BacklogState()

    def advance(self, config: BacklogPolicies, state: BacklogState,
                rows: Mapping[str, Sequence[dict[str, Any]]], watermark_ms: int | None) -> Advance:
        late: list[dict[str, Any]] = []
        for row in rows.get(INPUT, ()):
            ts = row["ts_ms"]
            if state.decided_before is not None and ts < state.decided_before:
                late.append({"input": INPUT, "reason": LATE_REASON, "row": row})
            else:
                state.pending.setdefault(ts, []).append(row)
        out: dict[str, list[dict[str, Any]]] = {CHECKS: [], EVICTIONS: [], QUARANTINE: []}
        final = sorted(ts for ts in state.pending if watermark_ms is None or ts < watermark_ms)
        quotas = resolver(config)
        for ts in final:
            self._decide(config, state, ts, state.pending.pop(ts), quotas, out)
        ends = [t for t in (state.decided_before, watermark_ms, final[-1] + 1 if final else None)
                if t is not None]
        state.decided_before = max(ends) if ends else None
        return Advance(out, late)

    @staticmethod
    def _decide(config: BacklogPolicies, state: BacklogState, ts: int, group: list[dict[str, Any]],
                quotas: Callable[[str, str | None], ResolvedQuotas],
                out: dict[str, list[dict[str, Any]]]) -> None:
        """One final tick: the group rules, then the check of the rows they keep (`quotas`: the
        advance's `resolver`)."""
        group.sort(key=lambda r: (r.get("_file", 0), r.get("_position", 0)))
        snapshots = [Snapshot.from_record(r) for r in group]
        used = []
        for row, snapshot, reason in zip(group, snapshots, group_reasons(snapshots), strict=True):
            if reason is None:
                used.append(snapshot)
            else:
                out[QUARANTINE].append({"input": INPUT, "reason": reason, "row": row})
        if not used:
            return
        topic = used[0].topic
        result = next_tick(config, ts, topic, used, state.counts, quotas(topic, used[0].partitioned_topic))
        out[CHECKS].append(check_row(result))
        out[EVICTIONS].extend(eviction_rows(result))
