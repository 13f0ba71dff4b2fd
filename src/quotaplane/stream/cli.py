"""`quotaplane stream`: the options, checked before Spark starts."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from quotaplane.core.errors import ConfigError
from quotaplane.core.policy import RunConfigs
from quotaplane.run_command import add_spark_options


def _seconds(option: str, allow_zero: bool = False):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{option} {text!r}: not a number of seconds") from None
        if value < 0 or (value == 0 and not allow_zero) or value != value:
            rule = "at least 0" if allow_zero else "more than 0"
            raise argparse.ArgumentTypeError(f"{option} {text!r}: must be {rule} seconds")
        return value
    return parse


def _count(option: str):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{option} {text!r}: not a whole number") from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"{option} {text!r}: must be at least 1")
        return value
    return parse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "stream",
        help="evaluate the policies continuously over a landing directory (Structured Streaming)",
        description="Read the telemetry landed under --landing as it arrives, evaluate every policy whose "
        "configuration is given, and append its decision rows under --out, exactly once through "
        "the checkpoint. Stops on SIGTERM or, with --until-idle, once the landing is idle.",
    )
    p.add_argument("--landing", type=Path, required=True,
                   help="landing directory: one folder of JSON Lines files per input (docs/telemetry.md)")
    p.add_argument("--out", type=Path, required=True,
                   help="output directory (decision tables, quarantine, late)")
    p.add_argument("--checkpoint", type=Path, help="checkpoint directory (default: <out>/_checkpoint)")
    p.add_argument("--config", type=Path, help="storage quota configuration (.properties)")
    p.add_argument("--client-quotas", type=Path, help="Kafka client quotas (JSON or kafka-configs text)")
    p.add_argument("--topic-config", type=Path, help="topic bytes-in thresholds (.properties)")
    p.add_argument("--backlog-policies", type=Path, help="Pulsar backlog quota policies (JSON)")
    p.add_argument("--trigger", type=_seconds("--trigger"), default=5.0, metavar="SECONDS",
                   help="micro-batch interval (default 5)")
    p.add_argument("--until-idle", type=_seconds("--until-idle"), metavar="SECONDS",
                   help="stop once no file has arrived for SECONDS, deciding everything pending")
    p.add_argument("--watermark-delay", type=_seconds("--watermark-delay", allow_zero=True), default=60.0,
                   metavar="SECONDS",
                   help="how far behind the latest event time rows may still arrive (default 60)")
    p.add_argument("--max-files-per-trigger", type=_count("--max-files-per-trigger"), metavar="N",
                   help="at most N new files per input in one micro-batch (default: all)")
    p.add_argument("--metrics-port", type=int, metavar="PORT", help="serve /metrics on this port")
    p.add_argument("--metrics-host", default="127.0.0.1", help="address of /metrics (default 127.0.0.1)")
    add_spark_options(p)
    p.add_argument("--quiet", action="store_true", help="no line per micro-batch")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from quotaplane.registry import POLICIES
    from quotaplane.stream.plan import streamed_policies
    from quotaplane.stream.run import StreamOptions, run_stream

    if args.metrics_port is not None and not 0 <= args.metrics_port <= 65535:
        raise ConfigError("--metrics-port", args.metrics_port, "must be a port number from 0 to 65535")
    configs = RunConfigs(storage=args.config, client_quotas=args.client_quotas, topics=args.topic_config,
                         backlog_policies=args.backlog_policies)
    streamed = streamed_policies(POLICIES, configs)
    options = StreamOptions(
        landing=args.landing, out=args.out, checkpoint=args.checkpoint or args.out / "_checkpoint",
        trigger_seconds=args.trigger, until_idle_seconds=args.until_idle,
        watermark_delay_ms=round(args.watermark_delay * 1000),
        max_files_per_trigger=args.max_files_per_trigger, metrics_port=args.metrics_port,
        metrics_host=args.metrics_host, master=args.master, remote=args.remote)
    names = ", ".join(s.policy.name for s in streamed)
    print(f"quotaplane stream: {args.landing} -> {args.out} ({names})", file=sys.stderr)
    log = run_stream(options, streamed, display=None if args.quiet else sys.stderr)
    latest = log.latest()
    print(f"quotaplane stream stopped after commit {latest.number}; watermark {latest.watermark_ms}",
          file=sys.stderr)
    return 0
