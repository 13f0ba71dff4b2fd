"""The live forecast ("what runs out next"): the recent observations, in memory.

Every round adds its volume observations and partition replica sizes; what the engine no longer
reads is dropped (volumes at or before the latest volume observation minus the window, replica
sizes minus the replica history, `ForecastSettings.history_ms`: 24 h by default), so the memory is
bounded by the rounds in that span. After the round the reference engine (`forecast_volumes`, the same
code `quotaplane forecast` runs) forecasts every volume as of the latest volume observation, so the
service's forecast equals the batch forecast over the same rows.

A restarted service starts with an empty window unless it lands its telemetry (`--landing DIR`):
then the window is warmed from the landed `volumes` and `partition_sizes` files (`warm`).
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from quotaplane.core.errors import InputError
from quotaplane.core.records import RecordSchema
from quotaplane.core.telemetry_files import read_input
from quotaplane.forecast.config import ForecastSettings
from quotaplane.forecast.engine.replicas import ReplicaPoint
from quotaplane.forecast.engine.volumes import VolumeForecast, VolumePoint, forecast_volumes
from quotaplane.forecast.records import PARTITION_SIZES
from quotaplane.storage.config import StorageConfig
from quotaplane.storage.engine.rounds import Round
from quotaplane.storage.records import VOLUMES


def round_volumes(rd: Round) -> list[VolumePoint]:
    """The volume observations of a round as it is landed (`volumes` rows at the round's time)."""
    return [VolumePoint(rd.ts, rd.cluster or "", v.broker_id, v.log_dir, v.total_bytes, v.available_bytes)
            for v in rd.volumes]


class ForecastWindow:
    """The volume and replica points of the last `settings.window_ms`, and their forecast."""

    def __init__(self, config: StorageConfig | None, settings: ForecastSettings) -> None:
        self.config = config
        self.settings = settings
        self.volumes: deque[VolumePoint] = deque()
        self.replicas: deque[ReplicaPoint] = deque()
        self.latest_ms: int | None = None  # the latest volume observation: the forecast's `at`

    def add(self, volumes: Iterable[VolumePoint], replicas: Iterable[ReplicaPoint]) -> None:
        """Points of one round (in time order across rounds), then drop what left the window."""
        for v in volumes:
            self.volumes.append(v)
            self.latest_ms = v.ts_ms if self.latest_ms is None else max(self.latest_ms, v.ts_ms)
        self.replicas.extend(replicas)
        if self.latest_ms is not None:
            # kept: ts > start, as the engine reads them (replica sizes over the longer history)
            for points, span in ((self.volumes, self.settings.window_ms),
                                 (self.replicas, self.settings.history_ms)):
                while points and points[0].ts_ms <= self.latest_ms - span:
                    points.popleft()

    def __len__(self) -> int:
        return len(self.volumes) + len(self.replicas)

    def forecast(self) -> list[VolumeForecast]:
        """Every volume's forecast as of the latest volume observation (`forecast_volumes`)."""
        return forecast_volumes(self.volumes, self.replicas, self.config, self.settings)

    def warm(self, landing: Path) -> int:
        """Fill the window from a landing directory's rounds (newest first, back to the window's
        start); returns the rounds read. A landed file that cannot be read is skipped (warned)."""
        names: set[str] = set()
        for kind in ("volumes", "partition_sizes"):
            folder = landing / kind
            if folder.is_dir():
                names.update(p.name for p in folder.glob("round-*.jsonl"))
        rounds: list[tuple[list[VolumePoint], list[ReplicaPoint]]] = []
        newest: int | None = None
        for name in sorted(names, reverse=True):
            try:
                volumes = [VolumePoint.from_record(r) for r in _rows(landing / "volumes" / name, VOLUMES)]
                replicas = [ReplicaPoint.from_record(r) for r in
                            _rows(landing / "partition_sizes" / name, PARTITION_SIZES)]
            except (InputError, OSError) as exc:
                print(f"warning: forecast window: skipped landed round {name}: {exc}", file=sys.stderr)
                continue
            stamps = [p.ts_ms for p in (*volumes, *replicas)]
            if not stamps:
                continue
            newest = max(stamps) if newest is None else newest
            if max(stamps) <= newest - self.settings.history_ms:
                break
            rounds.append((volumes, replicas))
        for volumes, replicas in reversed(rounds):
            self.add(sorted(volumes, key=lambda p: p.ts_ms), sorted(replicas, key=lambda p: p.ts_ms))
        return len(rounds)


def _rows(path: Path, schema: RecordSchema) -> list[dict[str, Any]]:
    return list(read_input(path, schema)) if path.is_file() else []
