"""`quotaplane storage evaluate`: one throttle-factor decision from a volumes file (reference engine)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from quotaplane.config.storage import StorageConfig, load_storage_config
from quotaplane.errors import InputError
from quotaplane.policies.storage import (
    Decision,
    StrimziThrottle,
    Volume,
    effective_limits,
    evaluate_cluster,
    evaluate_local,
)
from quotaplane.policies.storage.readers import read_volumes


def register(sub: argparse._SubParsersAction) -> None:
    group = sub.add_parser("storage", help="storage volume quotas (reference engine)",
                           description="Storage volume quotas: evaluate one decision.")
    commands = group.add_subparsers(dest="storage_command", metavar="COMMAND", required=True)
    p = commands.add_parser(
        "evaluate", help="compute the throttle factor and effective limits for one collection",
        description="Evaluate one collection round of volume observations and print one JSON object: "
        "throttle_factor, throttling_volume, fallback_reason, effective_limits, and the per-volume "
        "details. Volumes are JSON Lines: {\"broker_id\": int, \"log_dir\": str, \"total_bytes\": int, "
        "\"available_bytes\": int}. Exit 2 on bad configuration or input.")
    p.add_argument("--config", required=True, type=Path, help="storage quota configuration (.properties)")
    p.add_argument("--volumes", required=True, type=Path, help="volume observations (JSON Lines)")
    p.add_argument("--active-brokers", metavar="1,2,3",
                   help="the active brokers (default: the brokers present in the volumes file)")
    p.add_argument("--broker", metavar="ID",
                   help="the observing broker (required for the local source, which sees only its volumes)")
    p.add_argument("--collection-error", metavar="REASON",
                   help="evaluate a failed collection with this reason, e.g. DESCRIBE_LOG_DIR_ERROR")
    p.add_argument("--principal", metavar="NAME",
                   help="the client principal name (User: prefix optional); excluded ones are unlimited")
    p.add_argument("--metrics", metavar="FILE",
                   help="also write this evaluation's metrics in Prometheus text format ('-': stderr)")
    p.set_defaults(func=_evaluate)


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


def _evaluate(args: argparse.Namespace) -> int:
    config = load_storage_config(args.config)
    for warning in config.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    volumes = read_volumes(args.volumes)
    active = _int_list("--active-brokers", args.active_brokers) if args.active_brokers is not None else None
    broker = _int("--broker", args.broker) if args.broker is not None else None
    error = args.collection_error
    if error is not None and error.strip() == "":
        raise InputError("--collection-error", "--collection-error", error, "must not be empty")
    d = decide(config, volumes, active, broker, error)
    print(json.dumps(decision_json(config, d, args.principal, broker), indent=2))
    if args.metrics:
        from prometheus_client import CollectorRegistry

        from quotaplane.metrics import exposition
        from quotaplane.metrics.storage import register as register_metrics
        from quotaplane.metrics.storage import state_from_decision

        registry = CollectorRegistry()
        register_metrics(registry, [state_from_decision(d, config)])
        if args.metrics == "-":
            print(exposition.render(registry), file=sys.stderr, end="")
        else:
            exposition.write(registry, args.metrics)
    return 0
