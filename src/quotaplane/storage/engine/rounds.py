"""Collection rounds from telemetry rows, and the evaluation of a whole history round by round.

A round (docs/telemetry.md, docs/storage-quotas.md "Rounds"):

- rows sharing (cluster, poll_id); rows without `poll_id` fall in the storage check interval window
  `floor(ts / interval_ms)` (each distinct `ts` when the interval is 0);
- its time is the largest `ts` of its rows;
- its active brokers are its membership rows, or else the brokers its volume rows belong to;
- a volume observed twice in a round counts once: the latest `ts`, then the fewest available
  bytes, then the fewest total bytes;
- a collection error makes it a failed round (the earliest error, then the smallest reason, is
  the reason); an error row with no cluster applies to every cluster of the telemetry.

Rounds are ordered by (time, marked before unmarked, poll id or window). `evaluate_rounds` gives
one decision row per round (per round and active broker for the local source) with the columns of
the `storage_decisions` table; the Spark transform must give the same rows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from quotaplane.storage.config import StorageConfig
from quotaplane.storage.engine.cluster import evaluate_cluster
from quotaplane.storage.engine.decisions import Decision, effective_produce_limit
from quotaplane.storage.engine.local import evaluate_local
from quotaplane.storage.engine.strimzi import StrimziThrottle
from quotaplane.storage.engine.volume import Volume

Row = Mapping[str, Any]
RoundId = tuple[str | None, int | None, int | None]  # (cluster, poll_id, window)


@dataclass(frozen=True)
class Round:
    """One collection round of one cluster."""

    cluster: str | None
    poll_id: int | None
    window: int | None
    ts: int
    volumes: tuple[Volume, ...]
    members: frozenset[int] | None
    error: str | None

    @property
    def active(self) -> frozenset[int]:
        if self.members is not None:
            return self.members
        return frozenset(v.broker_id for v in self.volumes)

    @property
    def order(self) -> tuple[int, bool, int]:
        number = self.poll_id if self.poll_id is not None else self.window
        assert number is not None
        return (self.ts, self.poll_id is None, number)


def window_of(ts: int, interval_ms: int) -> int:
    """The check interval window of an unmarked row: `floor(ts / interval)`, or `ts` when 0."""
    return ts // interval_ms if interval_ms > 0 else ts


def round_id(cluster: str | None, row: Row, interval_ms: int) -> RoundId:
    """The round a row of `cluster` belongs to: (cluster, poll id, None) or (cluster, None, window)."""
    poll = row.get("poll_id")
    if poll is not None:
        return (cluster, int(poll), None)
    return (cluster, None, window_of(int(row["ts"]), interval_ms))


def group_rounds(volume_rows: Iterable[Row], membership_rows: Iterable[Row], error_rows: Iterable[Row],
                 interval_ms: int) -> list[Round]:
    """Group typed telemetry rows (as `RecordSchema.coerce_record` gives them) into rounds."""
    volume_rows, membership_rows, error_rows = list(volume_rows), list(membership_rows), list(error_rows)
    clusters = {r["cluster"] for r in (*volume_rows, *membership_rows)}
    clusters |= {r["cluster"] for r in error_rows if r.get("cluster") is not None}
    ts: dict[RoundId, int] = {}
    best: dict[RoundId, dict[tuple[int, str], tuple[tuple[int, int, int], Volume]]] = defaultdict(dict)
    members: dict[RoundId, set[int]] = defaultdict(set)
    errors: dict[RoundId, tuple[int, str]] = {}

    def seen(rid: RoundId, t: int) -> None:
        ts[rid] = max(ts.get(rid, t), t)

    for r in volume_rows:
        rid = round_id(r["cluster"], r, interval_ms)
        seen(rid, int(r["ts"]))
        v = Volume(int(r["broker_id"]), r["log_dir"], int(r["total_bytes"]), int(r["available_bytes"]))
        rank = (-int(r["ts"]), v.available_bytes, v.total_bytes)
        current = best[rid].get(v.key)
        if current is None or rank < current[0]:
            best[rid][v.key] = (rank, v)
    for r in membership_rows:
        rid = round_id(r["cluster"], r, interval_ms)
        seen(rid, int(r["ts"]))
        members[rid].add(int(r["broker_id"]))
    for r in error_rows:
        targets = [r["cluster"]] if r.get("cluster") is not None else (sorted(clusters) or [None])
        for cluster in targets:
            rid = round_id(cluster, r, interval_ms)
            seen(rid, int(r["ts"]))
            candidate = (int(r["ts"]), r["reason"])
            if rid not in errors or candidate < errors[rid]:
                errors[rid] = candidate
    rounds = [
        Round(cluster=rid[0], poll_id=rid[1], window=rid[2], ts=t,
              volumes=tuple(v for _, v in best[rid].values()),
              members=frozenset(members[rid]) if rid in members else None,
              error=errors[rid][1] if rid in errors else None)
        for rid, t in ts.items()
    ]
    return sorted(rounds, key=lambda rd: (rd.cluster or "", rd.order))


def decision_row(rd: Round, d: Decision, config: StorageConfig) -> dict[str, Any]:
    """One row of the `storage_decisions` table (without the `ts` timestamp column)."""
    return {
        "ts_ms": rd.ts,
        "cluster": rd.cluster,
        "poll_id": rd.poll_id,
        "round_window": rd.window,
        "source": d.source,
        "observing_broker_id": d.observing_broker_id,
        "throttle_factor": d.throttle_factor,
        "throttling_broker_id": d.throttling_broker_id,
        "throttling_log_dir": d.throttling_log_dir,
        "fallback_reason": d.fallback_reason,
        "fallback_applied": d.fallback_applied,
        "collection_error": d.collection_error,
        "active_brokers": d.active_brokers,
        "active_log_dirs": d.active_log_dirs,
        "missing_brokers": len(d.missing_brokers),
        "used_bytes": d.used_bytes,
        "effective_produce_limit": effective_produce_limit(config.quotas.produce, d.throttle_factor),
    }


class RoundClock:
    """The strimzi throttle's clock in `RoundEvaluator`: the time of the round being evaluated (a
    plain object, not a closure, so that throttles pickle)."""

    def __init__(self, now: int = 0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


class RoundEvaluator:
    """Rounds evaluated one at a time, in order per cluster, as the live service sees them: the
    strimzi dialect's throttle (validity, observation cache) is kept per cluster in `throttles`,
    created at its first round, with the round's time as its clock.

    `throttles` given to the constructor carry on from earlier rounds (the streaming mode keeps
    them pickled between micro-batches: they pickle without the configuration and the clock, both
    given back here); the dict is updated in place.
    """

    def __init__(self, config: StorageConfig,
                 throttles: dict[str | None, StrimziThrottle] | None = None) -> None:
        self.config = config
        self._clock = RoundClock()
        self.throttles: dict[str | None, StrimziThrottle] = {} if throttles is None else throttles
        for throttle in self.throttles.values():
            throttle.rebind(config, self._clock)

    def evaluate(self, rd: Round) -> list[tuple[Decision, dict[str, Any]]]:
        """The decisions of one round (one per active broker for the local source), with their rows
        of the `storage_decisions` table."""
        config = self.config
        if config.evaluation == "strimzi":
            self._clock.now = rd.ts
            throttle = self.throttles.get(rd.cluster)
            if throttle is None:
                throttle = self.throttles[rd.cluster] = StrimziThrottle(config, clock=self._clock)
            decisions = [throttle.observe(rd.volumes, rd.active, rd.error)]
        elif config.evaluation == "cluster":
            decisions = [evaluate_cluster(config, rd.volumes, rd.active, rd.error)]
        else:
            decisions = [evaluate_local(config, rd.volumes, broker, rd.active, rd.error)
                         for broker in sorted(rd.active)]
        return [(d, decision_row(rd, d, config)) for d in decisions]


def evaluate_rounds(config: StorageConfig, rounds: Iterable[Round]) -> list[dict[str, Any]]:
    """Evaluate every round in order, cluster by cluster (`RoundEvaluator`)."""
    by_cluster: dict[str | None, list[Round]] = defaultdict(list)
    for rd in rounds:
        by_cluster[rd.cluster].append(rd)
    evaluator = RoundEvaluator(config)
    out: list[dict[str, Any]] = []
    for cluster in sorted(by_cluster, key=lambda c: c or ""):
        for rd in sorted(by_cluster[cluster], key=lambda rd: rd.order):
            out.extend(row for _, row in evaluator.evaluate(rd))
    return out
