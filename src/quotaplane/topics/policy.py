"""Topic bytes-in quotas as a `Policy` (spec: kafka-topic-bytes-in-quota; docs/topics.md)."""

from __future__ import annotations

from quotaplane.core.policy import Outputs, Policy, RunConfigs, StageContext, StageResult
from quotaplane.topics.cli import TopicsEvaluator
from quotaplane.topics.config import TopicQuotaConfig, load_topics_config
from quotaplane.topics.incremental import TopicsIncremental
from quotaplane.topics.records import INPUTS


class TopicsPolicy(Policy[TopicQuotaConfig]):
    name = "topics"
    title = "topic bytes-in quotas: judge produce requests with the reference engine"
    inputs = INPUTS
    evaluator = TopicsEvaluator()
    incremental = TopicsIncremental()

    def load_config(self, configs: RunConfigs) -> TopicQuotaConfig | None:
        return load_topics_config(configs.topics) if configs.topics is not None else None

    def run_stage(self, ctx: StageContext, config: TopicQuotaConfig, outputs: Outputs) -> StageResult:
        from quotaplane.topics.spark.stage import run_stage

        return run_stage(ctx, config, outputs)
