"""`quotaplane topics evaluate`: topic bytes-in quotas with the reference engine (no Spark).

Prints one JSON line per request, in input order: the request, its decision
(`accepted|throttled|error`), the reason, the broker-wide and topic one-minute rates it was judged by
and the thresholds. Rejected threshold changes are reported on stderr (`warning: ...`); they do not
change the exit code. See docs/topics.md.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from quotaplane.core.policy import Evaluator, ReferenceEvaluation
from quotaplane.topics.config import TopicQuotaConfig, change_error, load_topics_config
from quotaplane.topics.engine.evaluate import Evaluation, evaluate
from quotaplane.topics.engine.requests import read_requests

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry


class TopicsEvaluator(Evaluator):
    help = "judge every produce request (accepted, throttled or error)"
    description = (
        "Print one JSON line per request, in input order, with ts_ms, broker_id, topic, bytes, "
        "decision (accepted|throttled|error), reason, total_rate, topic_rate (one-minute rates in bytes/s "
        "when it was judged), total_threshold, topic_threshold and threshold_source (explicit|default).")

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("--config", required=True, type=Path, metavar="FILE",
                       help="a .properties file: total.bytes.in.per.sec.threshold, message.max.bytes, "
                       "topic.<name>.bytes.in.per.sec.threshold[@<epoch ms>]")
        p.add_argument("--requests", required=True, type=Path, metavar="FILE",
                       help="produce requests, JSON Lines: ts_ms, broker_id, topic, bytes")

    def evaluate(self, args: argparse.Namespace) -> TopicsEvaluation:
        config = load_topics_config(args.config)
        return TopicsEvaluation(config, evaluate(config, read_requests(args.requests)))


class TopicsEvaluation(ReferenceEvaluation):
    def __init__(self, config: TopicQuotaConfig, evaluation: Evaluation) -> None:
        self.config = config
        self.evaluation = evaluation
        self.warnings = [str(change_error(c)) for c in config.rejected_changes]

    def rows(self) -> Iterable[dict[str, Any]]:
        return (d.as_dict() for d in self.evaluation.decisions)

    def register_metrics(self, registry: CollectorRegistry) -> None:
        """The meters at the last request."""
        from quotaplane.topics.metrics import TopicMetrics

        counts = Counter((d.broker_id, d.topic, d.decision) for d in self.evaluation.decisions)
        registry.register(TopicMetrics(self.evaluation.meters, dict(counts), {
            "accepted": len(self.config.accepted_changes), "rejected": len(self.config.rejected_changes)}))
