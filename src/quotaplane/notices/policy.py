"""Producer throttle notices as a `Policy` (spec: pip-385-producer-throttle-protocol; docs/notices.md)."""

from __future__ import annotations

from quotaplane.core.policy import Outputs, Policy, RunConfigs, StageContext, StageResult
from quotaplane.notices.cli import NoticesEvaluator
from quotaplane.notices.config import NoticeConfig, load_notice_config
from quotaplane.notices.records import INPUTS


class NoticesPolicy(Policy[NoticeConfig]):
    name = "notices"
    title = "producer throttle notices (PIP-385): notices, receipts and connection pauses"
    inputs = INPUTS
    evaluator = NoticesEvaluator()

    def load_config(self, configs: RunConfigs) -> NoticeConfig | None:
        return load_notice_config(configs.notices) if configs.notices is not None else None

    def run_stage(self, ctx: StageContext, config: NoticeConfig, outputs: Outputs) -> StageResult:
        from quotaplane.notices.spark.stage import run_stage

        return run_stage(ctx, config, outputs)
