"""`quotaplane topics evaluate`: topic bytes-in quotas with the reference engine (no Spark).

Prints one JSON line per request, in input order: the request, its decision
(`accepted|throttled|error`), the reason, the broker-wide and topic one-minute rates it was judged by
and the thresholds. Rejected threshold changes are reported on stderr (`warning: ...`); they do not
change the exit code. See docs/topics.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from prometheus_client import CollectorRegistry

from quotaplane.config.topics import change_error, load_topics_config
from quotaplane.metrics import exposition
from quotaplane.metrics.topics import TopicMetrics
from quotaplane.metrics.topics import register as register_metrics
from quotaplane.policies.topics.engine import evaluate
from quotaplane.policies.topics.requests import read_requests


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "topics", help="topic bytes-in quotas: judge produce requests with the reference engine",
        description="Broker-wide and per-topic bytes-in thresholds judged with the one-minute rate.")
    sub = parser.add_subparsers(dest="topics_command", metavar="SUBCOMMAND", required=True)
    ev = sub.add_parser(
        "evaluate", help="judge every produce request (accepted, throttled or error)",
        description="Print one JSON line per request, in input order, with ts_ms, broker_id, topic, bytes, "
        "decision (accepted|throttled|error), reason, total_rate, topic_rate (one-minute rates in bytes/s "
        "when it was judged), total_threshold, topic_threshold and threshold_source (explicit|default).")
    ev.add_argument("--config", required=True, type=Path, metavar="FILE",
                    help="a .properties file: total.bytes.in.per.sec.threshold, message.max.bytes, "
                    "topic.<name>.bytes.in.per.sec.threshold[@<epoch ms>]")
    ev.add_argument("--requests", required=True, type=Path, metavar="FILE",
                    help="produce requests, JSON Lines: ts_ms, broker_id, topic, bytes")
    ev.add_argument("--metrics", type=Path, metavar="FILE",
                    help="also write the meters at the last request (Prometheus text format) to FILE")
    ev.set_defaults(func=run_evaluate)


def run_evaluate(args: argparse.Namespace) -> int:
    config = load_topics_config(args.config)
    for change in config.rejected_changes:
        print(f"warning: {change_error(change)}", file=sys.stderr)
    requests = read_requests(args.requests)
    evaluation = evaluate(config, requests)
    out = sys.stdout
    for decision in evaluation.decisions:
        out.write(json.dumps(decision.as_dict()) + "\n")
    out.flush()
    if args.metrics:
        counts = Counter((d.broker_id, d.topic, d.decision) for d in evaluation.decisions)
        registry = CollectorRegistry()
        register_metrics(registry, TopicMetrics(evaluation.meters, dict(counts), {
            "accepted": len(config.accepted_changes), "rejected": len(config.rejected_changes)}))
        exposition.write(registry, args.metrics)
    return 0
