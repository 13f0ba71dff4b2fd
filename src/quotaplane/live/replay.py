"""`quotaplane serve --replay DIR`: the service's rounds from recorded telemetry instead of a cluster.

The `volumes`, `membership` and `collection_errors` inputs are read with the reference readers
(JSON Lines, CSV or Parquet; the same line and field rules as every reader, docs/telemetry.md),
grouped into collection rounds exactly as the batch pipeline groups them (`group_rounds`), and given
to the service one round at a time, in time order, so its decisions equal the batch
`storage_decisions` round by round. The forecast's `partition_sizes` input is read the same way when
present; each round hands the forecast the `volumes` and `partition_sizes` rows timed after the
previous round up to its own (rows later than the last round are not replayed), so the replay's
forecast after a round is the reference forecast over the rows up to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from quotaplane.core.errors import InputError
from quotaplane.core.policy import find_input
from quotaplane.core.telemetry_files import read_input
from quotaplane.forecast.engine.replicas import ReplicaPoint
from quotaplane.forecast.engine.volumes import VolumePoint
from quotaplane.forecast.records import PARTITION_SIZES
from quotaplane.live.admin import QuotaAlteration, QuotaEntity
from quotaplane.storage.config import StorageConfig
from quotaplane.storage.engine.rounds import Round, group_rounds
from quotaplane.storage.records import COLLECTION_ERRORS, MEMBERSHIP, VOLUMES


@dataclass
class Recorded:
    """A telemetry directory to replay: its rounds in play order and, in time order, the rows the
    forecast reads."""

    rounds: list[Round]
    volumes: list[VolumePoint]
    replicas: list[ReplicaPoint]


def read_recorded(telemetry: Path, config: StorageConfig) -> Recorded:
    """The rounds and forecast rows of a telemetry directory (`InputError` for a bad record)."""
    if not telemetry.is_dir():
        raise InputError(str(telemetry), "--replay", str(telemetry), "is not a directory")
    inputs = {}
    for schema in (VOLUMES, MEMBERSHIP, COLLECTION_ERRORS, PARTITION_SIZES):
        path = find_input(telemetry, schema.name)
        inputs[schema.name] = list(read_input(Path(path), schema)) if path else []
    if not inputs["volumes"] and not inputs["collection_errors"]:
        raise InputError(str(telemetry), "--replay", str(telemetry), "holds no volumes to replay")
    rounds = group_rounds(inputs["volumes"], inputs["membership"], inputs["collection_errors"],
                          config.check_interval_ms)
    by_time = lambda p: p.ts_ms  # noqa: E731
    return Recorded(sorted(rounds, key=lambda rd: (rd.ts, rd.cluster or "", rd.order)),
                    sorted(map(VolumePoint.from_record, inputs["volumes"]), key=by_time),
                    sorted(map(ReplicaPoint.from_record, inputs["partition_sizes"]), key=by_time))


def replay_rounds(telemetry: Path, config: StorageConfig) -> list[Round]:
    """Every collection round of the telemetry, in the order the service plays them."""
    return read_recorded(telemetry, config).rounds


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
