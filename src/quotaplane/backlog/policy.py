"""Pulsar backlog quotas as a `Policy` (spec: pip-323-backlog-quota-telemetry; docs/backlog.md)."""

from __future__ import annotations

from quotaplane.backlog.cli import BacklogEvaluator
from quotaplane.backlog.config import BacklogPolicies, load_backlog_policies
from quotaplane.backlog.incremental import BacklogIncremental
from quotaplane.backlog.outputs import BacklogChecks
from quotaplane.backlog.records import INPUTS
from quotaplane.core.policy import Outputs, Policy, RunConfigs, StageContext, StageResult


class BacklogPolicy(Policy[BacklogPolicies]):
    name = "backlog"
    title = "Pulsar backlog quotas (PIP-323): evaluate check ticks with the reference engine"
    inputs = INPUTS
    provides = (BacklogChecks,)
    evaluator = BacklogEvaluator()
    incremental = BacklogIncremental()

    def load_config(self, configs: RunConfigs) -> BacklogPolicies | None:
        path = configs.backlog_policies
        return load_backlog_policies(path) if path is not None else None

    def run_stage(self, ctx: StageContext, config: BacklogPolicies, outputs: Outputs) -> StageResult:
        from quotaplane.backlog.spark.stage import run_stage

        return run_stage(ctx, config, outputs)
