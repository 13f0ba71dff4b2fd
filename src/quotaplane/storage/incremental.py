"""Storage volume quotas in the streaming mode (`quotaplane stream`): collection rounds decided one
at a time as the watermark makes them final (docs/storage-quotas.md "In the streaming mode").
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from quotaplane.core.incremental import Advance, Column, Incremental, Table
from quotaplane.storage.config import StorageRunConfig
from quotaplane.storage.engine.rounds import RoundEvaluator, group_rounds, round_id
from quotaplane.storage.engine.strimzi import StrimziThrottle

INPUT_NAMES = ("volumes", "membership", "collection_errors")
#: `storage_decisions` as the batch stage writes it (`quotaplane.storage.spark.decisions.DECISION_COLUMNS`)
DECISIONS = Table("storage_decisions", (
    Column("ts", "timestamp_ms"), Column("ts_ms", "long"), Column("cluster", "string"),
    Column("poll_id", "long"), Column("round_window", "long"), Column("source", "string"),
    Column("observing_broker_id", "long"), Column("throttle_factor", "double"),
    Column("throttling_broker_id", "long"), Column("throttling_log_dir", "string"),
    Column("fallback_reason", "string"), Column("fallback_applied", "boolean"),
    Column("collection_error", "string"), Column("active_brokers", "long"),
    Column("active_log_dirs", "long"), Column("missing_brokers", "long"), Column("used_bytes", "long"),
    Column("effective_produce_limit", "double"),
))


@dataclass
class PendingRound:
    """The rows seen so far of one undecided round, per input; `ts`: their largest `ts`."""

    poll_id: int | None
    window: int | None
    ts: int
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {n: [] for n in INPUT_NAMES})

    @property
    def order(self) -> tuple[int, bool, int]:
        """`Round.order` as it stands (the time can only grow, and with it the order)."""
        number = self.poll_id if self.poll_id is not None else self.window
        assert number is not None
        return (self.ts, self.poll_id is None, number)


@dataclass
class StorageKeyState:
    """One cluster's state between micro-batches (see `StorageIncremental`)."""

    pending: dict[tuple[int | None, int | None], PendingRound] = field(default_factory=dict)
    throttles: dict[str | None, StrimziThrottle] = field(default_factory=dict)
    decided_polls: list[tuple[int, int]] = field(default_factory=list)
    watermark: int | None = None


def _window_end(window: int, interval_ms: int) -> int:
    """The end (exclusive) of a check interval window (`window_of`): one `ts` when the interval is 0."""
    return (window + 1) * interval_ms if interval_ms > 0 else window + 1


def _final(rd: PendingRound, watermark_ms: int | None, interval_ms: int) -> bool:
    if watermark_ms is None:
        return True
    if rd.poll_id is not None:
        return rd.ts < watermark_ms
    assert rd.window is not None
    return _window_end(rd.window, interval_ms) <= watermark_ms


def _decided(ranges: Sequence[tuple[int, int]], poll_id: int) -> bool:
    i = bisect_right(ranges, (poll_id, float("inf")))
    return i > 0 and ranges[i - 1][0] <= poll_id <= ranges[i - 1][1]


def _mark_decided(ranges: list[tuple[int, int]], poll_id: int) -> None:
    """Add `poll_id` to sorted disjoint inclusive ranges, merging neighbours (consecutive poll ids,
    as the live service numbers its rounds, stay one range)."""
    i = bisect_right(ranges, (poll_id, float("inf")))
    lo, hi = poll_id, poll_id
    if i > 0 and ranges[i - 1][1] >= poll_id - 1:
        i -= 1
        lo, hi = ranges[i][0], max(ranges[i][1], poll_id)
        del ranges[i]
    if i < len(ranges) and ranges[i][0] <= hi + 1:
        hi = max(hi, ranges[i][1])
        del ranges[i]
    ranges.insert(i, (lo, hi))


class StorageIncremental(Incremental[StorageRunConfig]):
    """Storage decisions per cluster, round by round (docs/storage-quotas.md "Rounds and histories").

    - Key: `cluster` (a null cluster is a key too). The driver gives a `collection_errors` row naming
      no cluster to every named cluster's key with `cluster` rewritten (the batch rule "an error
      naming no cluster applies to every cluster of the telemetry"), or to the null key.
    - Unit: a collection round of `quotaplane.storage.engine.rounds` (`group_rounds`), decided by
      the reference `RoundEvaluator` into `decision_row`s (one per round; per round and active
      broker for the local source). Only the main configuration is streamed (not `compare`).
    - Final at watermark W: a window round (no `poll_id`, window `floor(ts / interval)`) when W is
      at or past its window's end (`ts + 1` with interval 0); a poll round when every row seen has
      `ts < W`. A poll's rows must land together (the live service writes a round's rows at once,
      all at its time): a row for a poll round already decided is set aside in `Advance.late`,
      never re-decided, as is a row below the watermark already passed for a round not pending.
      Rounds are decided in `Round.order` (as `evaluate_rounds`): a final round waits behind an
      earlier undecided one (the strimzi throttle carries state from round to round).
    - State: the rows of the undecided rounds (rounds whose window or time is not yet behind the
      watermark, or that wait behind such a round); the strimzi dialect's throttle (factor,
      validity, observation cache: evicted by validity, so bounded by the cluster's volumes;
      pickled without the configuration); the decided poll ids as ranges (one range while poll ids
      are consecutive); the last watermark. Decided rounds' rows are dropped.
    """

    name = "storage"
    time_fields: ClassVar[Mapping[str, str]] = {n: "ts" for n in INPUT_NAMES}
    key = ("cluster",)
    outcomes: ClassVar[Mapping[str, str]] = {"storage_decisions": "fallback_reason"}
    # an error naming no cluster applies to every cluster (docs/telemetry.md)
    unkeyed = ("collection_errors",)
    tables = (DECISIONS,)

    def new_state(self, config: StorageRunConfig) -> StorageKeyState:
        return StorageKeyState()

    def advance(self, config: StorageRunConfig, state: StorageKeyState,
                rows: Mapping[str, Sequence[dict[str, Any]]], watermark_ms: int | None) -> Advance:
        main = config.main
        interval = main.check_interval_ms
        late: list[dict[str, Any]] = []
        for name in INPUT_NAMES:
            for row in rows.get(name, ()):
                reason = _admit(state, name, row, interval)
                if reason is not None:
                    late.append({"input": name, "reason": reason, "row": row})
        if watermark_ms is not None:
            state.watermark = watermark_ms if state.watermark is None else max(state.watermark, watermark_ms)
        evaluator = RoundEvaluator(main, state.throttles)
        out: list[dict[str, Any]] = []
        for rd in sorted(state.pending.values(), key=lambda rd: rd.order):
            if not _final(rd, watermark_ms, interval):
                break
            del state.pending[(rd.poll_id, rd.window)]
            if rd.poll_id is not None:
                _mark_decided(state.decided_polls, rd.poll_id)
            r = rd.rows
            for decided in group_rounds(r["volumes"], r["membership"], r["collection_errors"], interval):
                for _, row in evaluator.evaluate(decided):
                    out.append({c.name: row["ts_ms"] if c.name == "ts" else row[c.name]
                                for c in DECISIONS.columns})
        return Advance({DECISIONS.name: out}, late)

    def decided_through(self, state: StorageKeyState, watermark_ms: int | None) -> int | None:
        """Every decision with `ts_ms` below the result has been returned: at most W, and at most the
        time of every undecided round (a round's time is the largest `ts` of its rows: it can only
        grow; a round not seen yet gets a time >= W)."""
        bound = watermark_ms
        for rd in state.pending.values():
            bound = rd.ts if bound is None else min(bound, rd.ts)
        return bound


def _admit(state: StorageKeyState, name: str, row: dict[str, Any], interval_ms: int) -> str | None:
    """Add a row to its pending round; the reason it is late when its round cannot take it."""
    _, poll_id, window = round_id(row.get("cluster"), row, interval_ms)
    ts = int(row["ts"])
    rd = state.pending.get((poll_id, window))
    if rd is None:
        if poll_id is not None and _decided(state.decided_polls, poll_id):
            return (f"poll round {poll_id} was decided already (a poll's rows must land together, "
                    "before the watermark passes them)")
        if state.watermark is not None and ts < state.watermark:
            return (f"ts {ts} is below the watermark {state.watermark} already passed: its round would "
                    "be decided out of order")
        rd = state.pending[(poll_id, window)] = PendingRound(poll_id, window, ts)
    rd.rows[name].append(row)
    rd.ts = max(rd.ts, ts)
    return None
