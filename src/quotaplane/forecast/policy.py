"""Forecasts as a `Policy`: what runs out next, after the storage and backlog stages (docs/forecast.md).

It runs when a storage configuration (with `volumes`) or backlog policies (with
`backlog_snapshots`) are given; it reads `partition_sizes` when present, the volumes itself (as of
their last time, which the storage stage gives in `LastVolumeTime`), and the backlog stage's
checks (`BacklogChecks`).
"""

from __future__ import annotations

from pathlib import Path

from quotaplane.backlog.outputs import BacklogChecks
from quotaplane.core.policy import Outputs, Policy, RunConfigs, StageContext, StageResult, find_input
from quotaplane.forecast.config import ForecastConfig, settings_of
from quotaplane.forecast.live import LIVE
from quotaplane.forecast.records import INPUTS
from quotaplane.storage.config import load_storage_config
from quotaplane.storage.outputs import LastVolumeTime


class ForecastPolicy(Policy[ForecastConfig]):
    name = "forecast"
    title = "what runs out next: time-to-limit forecasts per volume and per backlog"
    inputs = INPUTS
    needs = (BacklogChecks, LastVolumeTime)
    live = LIVE

    def load_config(self, configs: RunConfigs) -> ForecastConfig | None:
        if configs.storage is None and configs.backlog_policies is None:
            return None
        window, horizon = configs.forecast_window or "6h", configs.forecast_horizon or "7d"
        storage = load_storage_config(configs.storage) if configs.storage is not None else None
        settings = settings_of(window, horizon, prefix="--forecast-")
        return ForecastConfig(settings, storage, configs.backlog_policies is not None, window, horizon)

    def runnable(self, telemetry_dir: Path, config: ForecastConfig) -> bool:
        volumes = config.storage is not None and find_input(telemetry_dir, "volumes") is not None
        return volumes or (config.backlog and find_input(telemetry_dir, "backlog_snapshots") is not None)

    def run_stage(self, ctx: StageContext, config: ForecastConfig, outputs: Outputs) -> StageResult:
        from quotaplane.forecast.spark.stage import run_stage

        return run_stage(ctx, config, outputs)
