"""`quotaplane backlog evaluate`: Pulsar backlog quotas with the reference engine (no Spark).

Prints one JSON line per (tick, topic), in time then topic order; optionally writes the topic
stats (PIP-323 fields, JSON) and the metrics (Prometheus text). See docs/backlog.md.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from quotaplane.backlog.config import BacklogPolicies, load_backlog_policies
from quotaplane.backlog.engine.evaluate import evaluate
from quotaplane.backlog.engine.model import TickResult
from quotaplane.backlog.engine.reader import read_snapshots
from quotaplane.backlog.engine.stats import partitioned_stats, topic_metrics, topic_stats
from quotaplane.backlog.metrics import BacklogMetrics
from quotaplane.core.policy import Evaluator, ReferenceEvaluation

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry


class BacklogEvaluator(Evaluator):
    help = "check every (tick, topic) of backlog snapshots against the policies"
    description = (
        "Print one JSON line per (tick, topic), in time then topic order: backlog size and "
        "age, the subscription holding the oldest message, the limits, the exceeded quota (size|time) and "
        "the action (the policy in force for it).")

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("--policies", required=True, type=Path, metavar="FILE",
                       help='policies JSON: {"broker": {...}, "namespaces": {...}, "topics": {...}}')
        p.add_argument("--snapshots", required=True, type=Path, metavar="FILE",
                       help="backlog snapshots, JSON Lines (one subscription at one tick per line)")
        p.add_argument("--stats", type=Path, metavar="FILE",
                       help="also write the topic stats and partitioned-topic stats (JSON) to FILE")

    def evaluate(self, args: argparse.Namespace) -> BacklogEvaluation:
        policies = load_backlog_policies(args.policies)
        snapshots = read_snapshots(args.snapshots)
        start = time.perf_counter()
        results = evaluate(policies, snapshots)
        return BacklogEvaluation(policies, results, time.perf_counter() - start)


class BacklogEvaluation(ReferenceEvaluation):
    def __init__(self, policies: BacklogPolicies, results: list[TickResult], duration: float) -> None:
        self.policies = policies
        self.results = results
        self.duration = duration  # one observation of the check-duration histogram

    def rows(self) -> Iterable[dict[str, Any]]:
        return (r.as_dict() for r in self.results)

    def write_extras(self, args: argparse.Namespace) -> None:
        if args.stats:
            document = {
                "topics": {t: s.as_dict() for t, s in topic_stats(self.results).items()},
                "partitionedTopics": {t: s.as_dict() for t, s in partitioned_stats(self.results).items()},
            }
            args.stats.parent.mkdir(parents=True, exist_ok=True)
            args.stats.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")

    def register_metrics(self, registry: CollectorRegistry) -> None:
        broker = self.policies.broker
        registry.register(BacklogMetrics(broker.cluster_name, broker.expose_topic_level_metrics,
                                         topic_metrics(self.results), [self.duration]))
