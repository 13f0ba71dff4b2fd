"""`quotaplane clients evaluate|resolve`: Kafka client quotas with the reference engine (no Spark).

`evaluate` prints one JSON line per request, in input order: the request, its metric tags, the
quota it was checked against (`quota_limit`, null when unlimited) and where it came from, the rate
measured after recording it, and the throttle time. `resolve` prints, per quota type, the metric
tags of a (user, client-id) and the limit with the precedence level that supplied it. See
docs/clients.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from quotaplane.clients.config import load_client_quotas
from quotaplane.clients.engine.entities import LEVEL_PATHS, level_entity
from quotaplane.clients.engine.evaluate import ClientQuotaEngine, RequestOutcome
from quotaplane.clients.engine.quota_types import CONFIG_KEY, QUOTA_TYPES
from quotaplane.clients.engine.resolution import QuotaResolver
from quotaplane.clients.engine.settings import MUTATION_MODES, STRICT, ClientQuotaSettings
from quotaplane.clients.engine.storage_factor import FactorTimeline, StorageDecision
from quotaplane.clients.records import read_requests_jsonl
from quotaplane.core.errors import ConfigError, InputError
from quotaplane.core.fields import integer_text
from quotaplane.core.javamath import DOUBLE_MAX, INT_MAX
from quotaplane.core.policy import Evaluator, ReferenceEvaluation

OUTPUT_FIELDS = ("ts_ms", "broker_id", "user", "client_id", "quota_type", "value", "tag_user",
                 "tag_client_id", "quota_limit", "quota_level", "quota_source", "throttle_factor", "rate",
                 "window_ms", "tokens", "utilisation_pct", "violated", "throttled", "throttle_time_ms")


def _at_least_one(text: str) -> int:
    """An INT option of at least 1 (`quota.window.num` and `quota.window.size.seconds` are INT)."""
    if not integer_text(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
    value = int(text.strip(" \t"))
    if not 1 <= value <= INT_MAX:
        raise argparse.ArgumentTypeError(f"{value} must be from 1 to {INT_MAX}")
    return value


class ClientsEvaluator(Evaluator):
    help = "measure and throttle every request"
    description = (
        "Print one JSON line per request, in input order, with ts_ms, broker_id, user, "
        "client_id, quota_type, value, tag_user and tag_client_id (the metric tags), quota_limit (null "
        "when unlimited), quota_level (1-8), quota_source (client|static), throttle_factor, rate (after "
        "recording), window_ms, tokens (controller mutations), utilisation_pct, violated, throttled and "
        "throttle_time_ms; quota_value too with --quota-value-metric.")
    metrics = False  # the client metrics are per interval: the Spark stage of `quotaplane run` writes them

    def add_arguments(self, ev: argparse.ArgumentParser) -> None:
        ev.add_argument("--quotas", required=True, type=Path, metavar="FILE",
                        help="client quotas: JSON list of {entity, quotas} or kafka-configs.sh "
                        "--describe text")
        ev.add_argument("--requests", required=True, type=Path, metavar="FILE",
                        help="JSON Lines: ts_ms, broker_id, user, client_id, quota_type, value")
        ev.add_argument("--window-num", type=_at_least_one, default=11, metavar="N",
                        help="quota.window.num (default 11)")
        ev.add_argument("--window-size-seconds", type=_at_least_one, default=1, metavar="S",
                        help="quota.window.size.seconds (default 1)")
        ev.add_argument("--storage-decisions", type=Path, metavar="DIR",
                        help="storage decisions (Parquet: ts_ms, throttle_factor, observing_broker_id): "
                        "produce limits follow the throttle factor")
        ev.add_argument("--static-produce", type=float, metavar="BYTES_PER_S",
                        help="client.quota.callback.static.produce: the produce quota of clients without "
                        "one (implies the storage callback; default unlimited)")
        ev.add_argument("--quota-value-metric", action="store_true",
                        help="client.quota.value.metric.enable=true: add quota_value (KIP-786)")
        ev.add_argument("--controller-mutation-mode", choices=MUTATION_MODES, default=STRICT,
                        help="strict (check, then record; default) or permissive (record, then check)")

    def evaluate(self, args: argparse.Namespace) -> ClientsEvaluation:
        config = load_client_quotas(args.quotas)
        if args.static_produce is not None and not args.static_produce >= 0:
            raise ConfigError("--static-produce", args.static_produce, "must not be negative")
        decisions = read_decisions(args.storage_decisions) if args.storage_decisions else None
        static = args.static_produce
        settings = ClientQuotaSettings(
            window_num=args.window_num, window_size_seconds=args.window_size_seconds,
            quota_value_metric=args.quota_value_metric,
            storage_combined=decisions is not None or static is not None,
            static_produce=None if static is None or static >= DOUBLE_MAX else static,
            controller_mutation_mode=args.controller_mutation_mode)
        requests = read_requests_jsonl(args.requests)
        engine = ClientQuotaEngine(config, settings, FactorTimeline(decisions) if decisions else None)
        fields = (*OUTPUT_FIELDS, "quota_value") if settings.quota_value_metric else OUTPUT_FIELDS
        return ClientsEvaluation(engine.evaluate(requests), fields)


class ClientsEvaluation(ReferenceEvaluation):
    def __init__(self, outcomes: Iterable[RequestOutcome], fields: tuple[str, ...]) -> None:
        self.outcomes = outcomes
        self.fields = fields

    def rows(self) -> Iterable[dict[str, Any]]:
        for outcome in self.outcomes:
            row = outcome.as_dict()
            yield {k: row[k] for k in self.fields}


def register_resolve(sub: argparse._SubParsersAction) -> None:
    """`quotaplane clients resolve`."""
    rs = sub.add_parser(
        "resolve", help="metric tags and limit per quota type for a user and client id",
        description="Print, per quota type, the metric tags Kafka gives the (user, client-id), the "
        "limit found for them and the precedence level (1-8) and entity that supplied it.")
    rs.add_argument("--quotas", required=True, type=Path, metavar="FILE", help="client quotas file")
    rs.add_argument("--user", required=True, help="the user principal name")
    rs.add_argument("--client-id", required=True, help="the client id")
    rs.set_defaults(func=run_resolve)


def read_decisions(path: Path) -> list[StorageDecision]:
    """Storage decisions from a Parquet file or directory (pyarrow; no Spark)."""
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(str(path))
    except (OSError, ValueError) as exc:
        raise InputError(str(path), "--storage-decisions", str(path), f"cannot read Parquet: {exc}") from None
    for column in ("ts_ms", "throttle_factor"):
        if column not in table.column_names:
            raise InputError(str(path), column, None, "missing column of the storage decisions")
    ts = table.column("ts_ms").to_pylist()
    factor = table.column("throttle_factor").to_pylist()
    has_observing = "observing_broker_id" in table.column_names
    observing = table.column("observing_broker_id").to_pylist() if has_observing else [None] * len(ts)
    out = []
    for index, (t, f, b) in enumerate(zip(ts, factor, observing, strict=True), start=1):
        where = f"{path} row {index}"
        if t is None:
            raise InputError(where, "ts_ms", None, "missing required field")
        if f is None or not 0.0 <= float(f) <= 1.0:
            raise InputError(where, "throttle_factor", f, "must be a number from 0.0 to 1.0")
        out.append(StorageDecision(int(t), float(f), None if b is None else int(b)))
    return out


def run_resolve(args: argparse.Namespace) -> int:
    config = load_client_quotas(args.quotas)
    resolver = QuotaResolver(config)
    types = {}
    for quota_type in QUOTA_TYPES:
        tags, resolved = resolver.resolve(quota_type, args.user, args.client_id)
        entity = None
        if resolved.level is not None:
            entity = level_entity(resolved.level, tags.user, tags.client_id).path
        types[quota_type] = {
            "config_key": CONFIG_KEY[quota_type],
            "metric_tags": tags.as_dict(),
            "limit": resolved.limit,
            "level": resolved.level,
            "level_path": LEVEL_PATHS.get(resolved.level) if resolved.level else None,
            "entity": entity,
            "recorded": resolver.enabled(quota_type),
        }
    json.dump({"user": args.user, "client_id": args.client_id, "quota_types": types}, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0
