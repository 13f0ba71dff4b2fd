"""`quotaplane run`: the main job over a telemetry directory (the bundled example by default)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from importlib import resources
from pathlib import Path

from quotaplane.core.errors import InputError
from quotaplane.core.policy import RunConfigs

BUNDLED_EXAMPLE = "replication-fill"
# The bundled example's configuration files, by `RunConfigs` field.
EXAMPLE_CONFIG_FILES = {
    "storage": "storage-cluster.properties",
    "storage_compare": "storage-local.properties",
    "client_quotas": "client-quotas.json",
    "topics": "topics.properties",
    "backlog_policies": "backlog-policies.json",
    "notices": "notices.properties",
}


def examples_dir() -> Path:
    """The bundled examples, shipped inside the package (package data)."""
    return Path(str(resources.files("quotaplane") / "examples"))


def bundled_example(name: str = BUNDLED_EXAMPLE) -> tuple[Path, RunConfigs]:
    """The telemetry directory and configs of a bundled example."""
    root = examples_dir() / name
    if not (root / "telemetry").is_dir():
        raise InputError(str(root), "telemetry", None,
                         "the bundled example is missing; pass --telemetry DIR and the config options")
    config_dir = root / "config"
    found = {key: config_dir / file for key, file in EXAMPLE_CONFIG_FILES.items()
             if (config_dir / file).is_file()}
    return root / "telemetry", RunConfigs(**found)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="run the Spark pipeline: every policy over a telemetry directory",
        description="Evaluate every policy whose telemetry and configuration are present and write "
        "decisions (Parquet), metrics.prom, summary.json and report.html under --out. With no "
        "--telemetry, runs the bundled example on embedded Spark.",
    )
    p.add_argument("--telemetry", type=Path, help="telemetry directory (default: the bundled example)")
    p.add_argument("--config", type=Path, help="storage quota configuration (.properties)")
    p.add_argument("--compare-config", type=Path,
                   help="a second storage configuration evaluated side by side (e.g. the local source)")
    p.add_argument("--client-quotas", type=Path, help="Kafka client quotas (JSON or kafka-configs text)")
    p.add_argument("--topic-config", type=Path, help="topic bytes-in thresholds (.properties)")
    p.add_argument("--backlog-policies", type=Path, help="Pulsar backlog quota policies (JSON)")
    p.add_argument("--notices", type=Path,
                   help="producer throttle notices (PIP-385): Pulsar publish limits (.properties)")
    p.add_argument("--forecast-window", metavar="DURATION", help="forecast fit window (default 6h)")
    p.add_argument("--forecast-horizon", metavar="DURATION", help="forecast horizon (default 7d)")
    p.add_argument("--out", type=Path, default=Path("out"), help="output directory (default: ./out)")
    p.add_argument("--detail", action="store_true",
                   help="also write the large diagnostic tables (storage_volume_observations)")
    add_spark_options(p)
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.set_defaults(func=_run)


def add_spark_options(p: argparse.ArgumentParser) -> None:
    """`--master` or `--remote`: where Spark runs (the embedded `local[*]` without either)."""
    where = p.add_mutually_exclusive_group()
    where.add_argument("--master", help="Spark master URL (default: local[*]), e.g. spark://host:7077")
    where.add_argument("--remote", help="Spark Connect URL, e.g. sc://host:15002")


def _run(args: argparse.Namespace) -> int:
    from quotaplane.core.runner import print_outcome, run_pipeline
    from quotaplane.registry import POLICIES

    given = RunConfigs(storage=args.config, storage_compare=args.compare_config,
                       client_quotas=args.client_quotas, topics=args.topic_config,
                       backlog_policies=args.backlog_policies, notices=args.notices,
                       forecast_window=args.forecast_window,
                       forecast_horizon=args.forecast_horizon)
    if args.telemetry is None:
        telemetry, configs = bundled_example()
        configs = dataclasses.replace(
            configs, **{k: v for k, v in vars(given).items() if v is not None})
        print(f"quotaplane run: bundled example ({telemetry})", file=sys.stderr)
    else:
        telemetry, configs = args.telemetry, given
        print(f"quotaplane run: {telemetry}", file=sys.stderr)
    outcome = run_pipeline(telemetry, configs, args.out, POLICIES, master=args.master, remote=args.remote,
                           stream=None if args.quiet else sys.stderr, detail=args.detail)
    print_outcome(outcome)
    return 0
