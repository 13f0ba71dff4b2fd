"""Kafka client quotas as a `Policy` (spec: kip-786-quota-value-metrics; docs/clients.md).

The client quota stage needs the storage decisions (`StorageDecisions`): with the storage callback
installed, produce limits follow the storage throttle factor in force at each request. The stage
asks for them once it has read its requests.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from quotaplane.clients.cli import ClientsEvaluator, register_resolve
from quotaplane.clients.config import ClientsRunConfig, load_client_quotas
from quotaplane.clients.incremental import ClientsIncremental
from quotaplane.clients.records import INPUTS
from quotaplane.core.policy import Outputs, Policy, RunConfigs, StageContext, StageResult
from quotaplane.core.properties import load_properties
from quotaplane.storage.outputs import StorageDecisions

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


class ClientsPolicy(Policy[ClientsRunConfig]):
    name = "clients"
    title = "Kafka client quotas: throttle times and quota resolution (reference engine)"
    inputs = INPUTS
    needs = (StorageDecisions,)
    evaluator = ClientsEvaluator()
    incremental = ClientsIncremental()

    def load_config(self, configs: RunConfigs) -> ClientsRunConfig | None:
        if configs.client_quotas is None:
            return None
        props = load_properties(configs.storage) if configs.storage is not None else {}
        quotas = load_client_quotas(configs.client_quotas)
        config = ClientsRunConfig(quotas, props, storage_given=configs.storage is not None)
        config.settings(False)  # the properties are checked now, before Spark starts
        return config

    def run_stage(self, ctx: StageContext, config: ClientsRunConfig, outputs: Outputs) -> StageResult:
        from quotaplane.clients.spark.stage import run_stage

        def storage() -> DataFrame | None:
            decisions = outputs.get(StorageDecisions)
            return decisions.decisions if decisions is not None else None

        return run_stage(ctx, config, storage)

    def register_commands(self, sub: argparse._SubParsersAction) -> None:
        register_resolve(sub)
