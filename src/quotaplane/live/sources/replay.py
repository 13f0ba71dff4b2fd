"""`quotaplane serve --replay DIR`: the service's rounds from recorded telemetry instead of a cluster.

The storage inputs (`volumes`, `membership`, `collection_errors`) are read with the reference
readers (JSON Lines, CSV or Parquet; the line and field rules of docs/telemetry.md) and grouped
into collection rounds exactly as the batch pipeline groups them (`group_rounds`); every round
hands the service its own rows, in the batch run's round order, so its decisions equal the batch
`storage_decisions` round by round. An error row without a cluster stands for every cluster of the
telemetry, as in the batch run: each cluster's round gets it with its cluster filled in.

Every other input the live policies read (`partition_sizes`, ...) is handed over by time: a round
takes the rows timed after the previous round up to its own (rows later than the last round are
not replayed), so the replay's forecast after a round is the reference forecast over the rows up
to it.

A restarted replay (`--state`) resumes after the last round its state records, by that round's
time, cluster and number (`after`), not by a count of rounds: replaying other telemetry on the same
state decides only what lies after it. The rounds it skips are handed to the deciders to warm
their memory (`earlier`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from quotaplane.core.errors import InputError
from quotaplane.core.live import Outcome
from quotaplane.core.policy import find_input
from quotaplane.core.records import RecordSchema
from quotaplane.core.telemetry_files import read_input
from quotaplane.live.admin import QuotaAlteration, QuotaEntity
from quotaplane.live.sources import Observation
from quotaplane.storage.config import StorageConfig
from quotaplane.storage.engine.rounds import Round, group_rounds, round_id
from quotaplane.storage.records import COLLECTION_ERRORS, MEMBERSHIP, VOLUMES

ROUND_INPUTS = (VOLUMES, MEMBERSHIP, COLLECTION_ERRORS)
RoundKey = tuple[int, str, tuple[int, bool, int]]  # (ts, cluster, order): the batch run's round order


@dataclass
class ReplayRound:
    """One recorded round: its place in the batch order and its rows by input."""

    key: RoundKey
    cluster: str
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def ts_ms(self) -> int:
        return self.key[0]


def round_key(rd: Round) -> RoundKey:
    return (rd.ts, rd.cluster or "", rd.order)


def decision_key(row: Mapping[str, Any]) -> RoundKey:
    """The round key of a `storage_decisions` row (what the service's state records last)."""
    poll, window = row.get("poll_id"), row.get("round_window")
    number = poll if poll is not None else window
    return (int(row["ts_ms"]), row.get("cluster") or "", (int(row["ts_ms"]), poll is None, int(number or 0)))


def read_rounds(telemetry: Path, config: StorageConfig,
                timed: Sequence[RecordSchema] = ()) -> list[ReplayRound]:
    """Every recorded round in the batch run's order, with its rows (`InputError` for a bad record);
    the inputs of `timed` are sliced by time between rounds."""
    if not telemetry.is_dir():
        raise InputError(str(telemetry), "--replay", str(telemetry), "is not a directory")
    rows = {schema.name: _read(telemetry, schema) for schema in (*ROUND_INPUTS, *timed)}
    if not rows["volumes"] and not rows["collection_errors"]:
        raise InputError(str(telemetry), "--replay", str(telemetry), "holds no volumes to replay")
    interval = config.check_interval_ms
    rounds = group_rounds(rows["volumes"], rows["membership"], rows["collection_errors"], interval)
    by_id = {(rd.cluster, rd.poll_id, rd.window): ReplayRound(round_key(rd), rd.cluster or "")
             for rd in rounds}
    clusters = sorted({rd.cluster for rd in rounds if rd.cluster is not None})
    for schema in ROUND_INPUTS:
        for row in rows[schema.name]:
            for cluster in _clusters_of(row, clusters):
                owner = by_id[round_id(cluster, row, interval)]
                owner.rows.setdefault(schema.name, []).append(row if row.get("cluster") == cluster
                                                              else {**row, "cluster": cluster})
    ordered = sorted(by_id.values(), key=lambda r: r.key)
    for schema in timed:
        points = sorted(rows[schema.name], key=lambda r: r["ts"])
        at = 0
        for rd in ordered:
            start = at
            while at < len(points) and points[at]["ts"] <= rd.ts_ms:
                at += 1
            if start < at:
                rd.rows.setdefault(schema.name, []).extend(points[start:at])
    return ordered


def _read(telemetry: Path, schema: RecordSchema) -> list[dict[str, Any]]:
    path = find_input(telemetry, schema.name)
    return list(read_input(Path(path), schema)) if path else []


def _clusters_of(row: Mapping[str, Any], clusters: list[str]) -> Iterable[str | None]:
    if row.get("cluster") is not None:
        return [row["cluster"]]
    return clusters or [None]


class ReplaySource:
    """The recorded rounds after `after` (a round key; None: from the start), one per call."""

    name = "replay"

    def __init__(self, rounds: list[ReplayRound], after: RoundKey | None = None) -> None:
        self.rounds = rounds
        self.inputs = tuple(sorted({name for rd in rounds for name in rd.rows}))
        self.at = 0 if after is None else sum(1 for rd in rounds if rd.key <= after)
        self.start = self.at

    def earlier(self, span_ms: int) -> list[ReplayRound]:
        """The rounds skipped at the start that lie within `span_ms` of the first one to play."""
        if self.start == 0 or span_ms <= 0:
            return []
        resume = self.rounds[self.start - 1].ts_ms
        return [rd for rd in self.rounds[:self.start] if rd.ts_ms > resume - span_ms]

    def observe(self, number: int, now_ms: int, last: Mapping[str, Outcome]) -> Observation | None:
        if self.at >= len(self.rounds):
            return None
        rd = self.rounds[self.at]
        self.at += 1
        return Observation({name: list(rows) for name, rows in rd.rows.items()}, [], rd.ts_ms, rd.cluster)

    def gap_s(self) -> float | None:
        """Event seconds from the round just played to the next one (None: none left)."""
        i = self.at
        return (self.rounds[i].ts_ms - self.rounds[i - 1].ts_ms) / 1000 if 0 < i < len(self.rounds) else None

    def close(self) -> None:
        return


class InMemoryQuotas:
    """The client quotas of a replay (no cluster): held in memory, starting from `--client-quotas`,
    altered as a cluster would alter them (only the quota calls of `ClusterAdmin`)."""

    def __init__(self, quotas: Mapping[QuotaEntity, Mapping[str, float]] | None = None) -> None:
        self.quotas: dict[QuotaEntity, dict[str, float]] = {e: dict(q) for e, q in (quotas or {}).items()}

    def client_quotas(self) -> dict[QuotaEntity, dict[str, float]]:
        return {e: dict(q) for e, q in self.quotas.items() if q}

    def alter_client_quotas(self, alterations: Sequence[QuotaAlteration]) -> dict[QuotaEntity, str | None]:
        for a in alterations:
            entry = self.quotas.setdefault(a.entity, {})
            if a.value is None:
                entry.pop(a.key, None)
            else:
                entry[a.key] = a.value
        return {a.entity: None for a in alterations}

    def close(self) -> None:
        return

