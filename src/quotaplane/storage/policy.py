"""Storage volume quotas as a `Policy` (spec: strimzi-cluster-wide-volume-quotas; docs/storage-quotas.md)."""

from __future__ import annotations

from quotaplane.core.policy import Outputs, Policy, RunConfigs, StageContext, StageResult
from quotaplane.storage.cli import StorageEvaluator
from quotaplane.storage.config import StorageRunConfig, load_storage_config
from quotaplane.storage.incremental import StorageIncremental
from quotaplane.storage.live import LIVE
from quotaplane.storage.outputs import LastVolumeTime, StorageDecisions
from quotaplane.storage.records import INPUTS


class StoragePolicy(Policy[StorageRunConfig]):
    name = "storage"
    title = "storage volume quotas (reference engine)"
    inputs = INPUTS
    provides = (LastVolumeTime, StorageDecisions)
    evaluator = StorageEvaluator()
    incremental = StorageIncremental()
    live = LIVE

    def load_config(self, configs: RunConfigs) -> StorageRunConfig | None:
        if configs.storage is None:
            return None
        compare = load_storage_config(configs.storage_compare) if configs.storage_compare else None
        return StorageRunConfig(load_storage_config(configs.storage), compare)

    def run_stage(self, ctx: StageContext, config: StorageRunConfig, outputs: Outputs) -> StageResult:
        from quotaplane.storage.spark.stage import run_stage

        return run_stage(ctx, config.main, config.compare, outputs)
