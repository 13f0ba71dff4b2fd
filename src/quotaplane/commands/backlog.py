"""`quotaplane backlog evaluate`: Pulsar backlog quotas with the reference engine (no Spark).

Prints one JSON line per (tick, topic), in time then topic order; optionally writes the topic
stats (PIP-323 fields, JSON) and the metrics (Prometheus text). See docs/backlog.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from prometheus_client import CollectorRegistry

from quotaplane.config.backlog import load_backlog_policies
from quotaplane.metrics import exposition
from quotaplane.metrics.backlog import BacklogMetrics
from quotaplane.metrics.backlog import register as register_metrics
from quotaplane.policies.backlog.evaluate import evaluate
from quotaplane.policies.backlog.reader import read_snapshots
from quotaplane.policies.backlog.stats import partitioned_stats, topic_metrics, topic_stats


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "backlog", help="Pulsar backlog quotas (PIP-323): evaluate check ticks with the reference engine",
        description="Pulsar backlog quotas and their telemetry (PIP-323).")
    sub = parser.add_subparsers(dest="backlog_command", metavar="SUBCOMMAND", required=True)
    ev = sub.add_parser(
        "evaluate", help="check every (tick, topic) of backlog snapshots against the policies",
        description="Print one JSON line per (tick, topic), in time then topic order: backlog size and "
        "age, the subscription holding the oldest message, the limits, the exceeded quota (size|time) and "
        "the action (the policy in force for it).")
    ev.add_argument("--policies", required=True, type=Path, metavar="FILE",
                    help='policies JSON: {"broker": {...}, "namespaces": {...}, "topics": {...}}')
    ev.add_argument("--snapshots", required=True, type=Path, metavar="FILE",
                    help="backlog snapshots, JSON Lines (one subscription at one tick per line)")
    ev.add_argument("--stats", type=Path, metavar="FILE",
                    help="also write the topic stats and partitioned-topic stats (JSON) to FILE")
    ev.add_argument("--metrics", type=Path, metavar="FILE",
                    help="also write the metrics (Prometheus text format) to FILE")
    ev.set_defaults(func=run_evaluate)


def run_evaluate(args: argparse.Namespace) -> int:
    policies = load_backlog_policies(args.policies)
    snapshots = read_snapshots(args.snapshots)
    start = time.perf_counter()
    results = evaluate(policies, snapshots)
    duration = time.perf_counter() - start
    out = sys.stdout
    for r in results:
        out.write(json.dumps(r.as_dict()) + "\n")
    out.flush()
    if args.stats:
        document = {
            "topics": {t: s.as_dict() for t, s in topic_stats(results).items()},
            "partitionedTopics": {t: s.as_dict() for t, s in partitioned_stats(results).items()},
        }
        args.stats.parent.mkdir(parents=True, exist_ok=True)
        args.stats.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    if args.metrics:
        registry = CollectorRegistry()
        broker = policies.broker
        register_metrics(registry, BacklogMetrics(broker.cluster_name, broker.expose_topic_level_metrics,
                                                  topic_metrics(results), [duration]))
        exposition.write(registry, args.metrics)
    return 0
