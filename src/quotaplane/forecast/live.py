"""The forecast in the live service ("what runs out next"): the recent observations, in memory.

Every round adds its `volumes` and `partition_sizes` rows (those the readers' rules accept); what
the engine no longer reads is dropped (volumes at or before the latest volume observation minus the
window, replica sizes minus the replica history, `ForecastSettings.history_ms`: 24 h by default),
so the memory is bounded by the rounds in that span. After the round the reference engine
(`forecast_volumes`, the same code `quotaplane forecast` runs) forecasts every volume as of the
latest volume observation, so the service's forecast equals the batch forecast over the same rows.

A restarted service refills the window from its landing directory over the replica history
(`LIVE.memory_ms`), through `warm`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from prometheus_client.core import Metric

from quotaplane.core.live import Decider, LivePart, Observed, Outcome
from quotaplane.forecast.config import ForecastConfig, ForecastSettings
from quotaplane.forecast.engine.replicas import ReplicaPoint
from quotaplane.forecast.engine.volumes import VolumeForecast, VolumePoint, forecast_volumes
from quotaplane.forecast.metrics import ForecastMetrics
from quotaplane.forecast.records import PARTITION_SIZES
from quotaplane.storage.config import StorageConfig
from quotaplane.storage.records import VOLUMES


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


class ForecastDecider:
    """The live forecast of one service: the window, and its forecast after every round."""

    def __init__(self, window: ForecastWindow) -> None:
        self.window = window
        self.forecasts: list[VolumeForecast] = []

    def _add(self, observed: Observed) -> None:
        by_time = lambda p: p.ts_ms  # noqa: E731
        self.window.add(sorted(map(VolumePoint.from_record, observed.of(VOLUMES.name)), key=by_time),
                        sorted(map(ReplicaPoint.from_record, observed.of(PARTITION_SIZES.name)), key=by_time))

    def decide(self, observed: Observed, before: Mapping[str, Outcome]) -> Outcome:
        self._add(observed)
        self.forecasts = self.window.forecast()
        return Outcome(document=[f.as_dict() for f in self.forecasts])

    def warm(self, observed: Observed) -> None:
        self._add(observed)

    def metrics(self) -> Iterator[Metric]:
        yield from ForecastMetrics(self.forecasts, [], config="live").collect()


def _build(configs: Mapping[str, Any]) -> Decider | None:
    config: ForecastConfig | None = configs.get("forecast")
    if config is None or config.storage is None:
        return None
    return ForecastDecider(ForecastWindow(config.storage, config.settings))


LIVE = LivePart(inputs=(VOLUMES.name, PARTITION_SIZES.name), endpoint="/forecast", build=_build,
                memory_ms=lambda config: config.settings.history_ms)
