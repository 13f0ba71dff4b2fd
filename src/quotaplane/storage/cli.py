"""The storage verbs: `quotaplane storage evaluate` (one decision, reference engine, no Spark) and
`quotaplane config check` (validate a storage configuration)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from quotaplane.core.errors import InputError
from quotaplane.core.policy import Evaluator, ReferenceEvaluation
from quotaplane.storage.config import StorageConfig, load_storage_config
from quotaplane.storage.config_summary import as_dict, describe
from quotaplane.storage.engine import (
    Decision,
    StrimziThrottle,
    Volume,
    effective_limits,
    evaluate_cluster,
    evaluate_local,
)
from quotaplane.storage.engine.readers import read_volumes

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry


class StorageEvaluator(Evaluator):
    help = "compute the throttle factor and effective limits for one collection"
    description = (
        "Evaluate one collection round of volume observations and print one JSON object: "
        "throttle_factor, throttling_volume, fallback_reason, effective_limits, and the per-volume "
        "details. Volumes are JSON Lines: {\"broker_id\": int, \"log_dir\": str, \"total_bytes\": int, "
        "\"available_bytes\": int}. Exit 2 on bad configuration or input.")

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("--config", required=True, type=Path, help="storage quota configuration (.properties)")
        p.add_argument("--volumes", required=True, type=Path, help="volume observations (JSON Lines)")
        p.add_argument("--active-brokers", metavar="1,2,3",
                       help="the active brokers (default: the brokers present in the volumes file)")
        p.add_argument("--broker", metavar="ID",
                       help="the observing broker (required for the local source, which sees only its "
                       "volumes)")
        p.add_argument("--collection-error", metavar="REASON",
                       help="evaluate a failed collection with this reason, e.g. DESCRIBE_LOG_DIR_ERROR")
        p.add_argument("--principal", metavar="NAME",
                       help="the client principal name (User: prefix optional); excluded ones are unlimited")

    def evaluate(self, args: argparse.Namespace) -> StorageEvaluation:
        config = load_storage_config(args.config)
        volumes = read_volumes(args.volumes)
        active = None if args.active_brokers is None else _int_list("--active-brokers", args.active_brokers)
        broker = _int("--broker", args.broker) if args.broker is not None else None
        error = args.collection_error
        if error is not None and error.strip() == "":
            raise InputError("--collection-error", "--collection-error", error, "must not be empty")
        decision = decide(config, volumes, active, broker, error)
        return StorageEvaluation(config, decision, args.principal, broker)


class StorageEvaluation(ReferenceEvaluation):
    document = True

    def __init__(self, config: StorageConfig, decision: Decision, principal: str | None,
                 broker: int | None) -> None:
        self.config = config
        self.decision = decision
        self.principal = principal
        self.broker = broker
        self.warnings = list(config.warnings)

    def rows(self) -> Iterable[dict[str, Any]]:
        yield decision_json(self.config, self.decision, self.principal, self.broker)

    def register_metrics(self, registry: CollectorRegistry) -> None:
        from quotaplane.storage.metrics import StorageMetrics, state_from_decision

        registry.register(StorageMetrics([state_from_decision(self.decision, self.config)]))


def _int_list(flag: str, text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip() != ""]
    except ValueError:
        raise InputError(flag, flag, text, "must be broker ids separated by commas, e.g. 1,2,3") from None


def _int(flag: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise InputError(flag, flag, text, "must be a whole number (a broker id)") from None


def decide(config: StorageConfig, volumes: list[Volume], active: list[int] | None, broker: int | None,
           error: str | None) -> Decision:
    """One decision with the evaluation the configuration selects."""
    if config.evaluation == "local":
        if broker is None:
            raise InputError("--broker", "--broker", None,
                             "required with the local volume source (it sees only that broker's volumes)")
        return evaluate_local(config, volumes, broker, active, error)
    if config.evaluation == "cluster":
        return evaluate_cluster(config, volumes, active, error)
    throttle = StrimziThrottle(config, clock=lambda: 0)
    active_set = frozenset(active) if active is not None else frozenset(v.broker_id for v in volumes)
    return throttle.observe(volumes, active_set, error)


def decision_json(config: StorageConfig, d: Decision, principal: str | None,
                  broker: int | None) -> dict[str, Any]:
    """The printed object; its top-level keys are a stable contract for scripts."""
    if principal is not None and principal.startswith("User:"):
        principal = principal[len("User:"):]
    limits = effective_limits(config.quotas, d.throttle_factor, principal, config.excluded_principals)
    throttling = None
    if d.throttling_broker_id is not None:
        throttling = {"broker_id": d.throttling_broker_id, "log_dir": d.throttling_log_dir}
    return {
        "dialect": config.dialect,
        "source": config.source,
        "throttle_factor": d.throttle_factor,
        "throttling_volume": throttling,
        "fallback_reason": d.fallback_reason,
        "effective_limits": limits.as_dict(),
        "principal_excluded": principal is not None and principal in config.excluded_principals,
        "observing_broker_id": broker,
        "active_brokers": d.active_brokers,
        "active_log_dirs": d.active_log_dirs,
        "missing_brokers": list(d.missing_brokers),
        "used_bytes": d.used_bytes,
        "volumes": [
            {"broker_id": a.volume.broker_id, "log_dir": a.volume.log_dir,
             "total_bytes": a.volume.total_bytes, "available_bytes": a.volume.available_bytes,
             "used_bytes": a.volume.used_bytes, "available_ratio": a.volume.available_ratio,
             "soft_threshold_bytes": a.soft_threshold, "hard_threshold_bytes": a.hard_threshold,
             "soft_breached": a.soft_breached, "hard_breached": a.hard_breached, "factor": a.factor}
            for a in d.assessments
        ],
    }


def register_config_check(sub: argparse._SubParsersAction) -> None:
    """`quotaplane config check FILE`: validate a storage quota configuration and summarise it."""
    group = sub.add_parser("config", help="check configuration files",
                           description="Check configuration files.")
    commands = group.add_subparsers(dest="config_command", metavar="COMMAND", required=True)
    check = commands.add_parser(
        "check", help="validate a storage quota configuration (.properties)",
        description="Validate a storage quota configuration. Exit 0 and print a short normalised "
        "summary (dialect, source, limits, fallback); exit 2 and print one error per line otherwise. "
        "Warnings (deprecated settings, unknown property names) go to stderr.")
    check.add_argument("file", help="the .properties file")
    check.add_argument("--json", action="store_true", help="print the normalised configuration as JSON")
    check.set_defaults(func=_check)


def _check(args: argparse.Namespace) -> int:
    config = load_storage_config(args.file)
    for warning in config.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if args.json:
        print(json.dumps(as_dict(config), indent=2, sort_keys=True))
    else:
        print(f"{args.file}: OK")
        for line in describe(config):
            print(f"  {line}")
    return 0
