"""`quotaplane serve`: the live control loop for one Kafka cluster, or a replay of recorded telemetry.

Everything the service is given is checked before it touches the cluster (exit 2, one line, nothing
altered): the storage configuration, the mode (a Kafka cluster or `--replay`), the admin client
properties, `--client-quotas`, that `--state` is one this service wrote and can be written, that
`--landing` can be written, that the metrics port and the notice port are free, and that the
bootstrap servers answer. Once it runs, nothing it observes stops it (docs/live.md).

The cluster comes from `--bootstrap-servers`, or else from the storage configuration's admin client
(`client.quota.callback.kafka.admin.bootstrap.servers`, or the strimzi dialect's
`client.quota.callback.static.kafka.admin.*`), whose other properties configure the admin client;
`--command-config` properties override them. `--settings FILE` gives any option in a properties file
(`bootstrap-servers=...`, `dry-run=true`), the command line overriding it.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from quotaplane.core.errors import ConfigError, InputError
from quotaplane.live.admin import ClusterAdmin, QuotaEntity


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve", help="the live control loop: collect, decide, enforce through client quotas, /metrics",
        description="Every round: DescribeCluster, Metadata and DescribeLogDirs (v4) of a running Kafka "
        "cluster (or the next round of recorded telemetry with --replay), the storage throttle factor from "
        "the reference engine, AlterClientQuotas to scale the produce quotas, the volumes' time-to-limit "
        "forecast, /metrics, /healthz, /decision and /forecast.")
    add_arguments(p)
    p.set_defaults(func=run_serve, parser=p)


DEFAULTS: dict[str, Any] = {}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """serve's options; their defaults are applied after `--settings` (`options`), so that the
    command line overrides the file and the file overrides the defaults."""
    def add(*flags: str, default: Any = None, **kwargs: Any) -> None:
        action = parser.add_argument(*flags, default=argparse.SUPPRESS, **kwargs)
        DEFAULTS[action.dest] = default if action.nargs != 0 else bool(default)

    add("--settings", type=Path, metavar="FILE",
                   help="options in a properties file, one per line (bootstrap-servers=HOST:PORT, "
                   "dry-run=true, ...); the command line overrides them")
    add("--bootstrap-servers", metavar="HOST:PORT",
                   help="the Kafka cluster to protect (default: the configuration's admin client "
                   "bootstrap.servers)")
    add("--replay", type=Path, metavar="DIR",
                   help="drive the loop from recorded telemetry instead of a cluster")
    add("--config", type=Path, metavar="FILE",
                   help="storage quota configuration (.properties)")
    add("--command-config", type=Path, metavar="FILE",
                   help="Admin client properties (security.protocol, sasl.*, ssl.*), as kafka-configs.sh "
                   "takes them; they override the configuration's admin client properties")
    add("--client-quotas", type=Path, metavar="FILE",
                   help="base client quotas (JSON or kafka-configs text); with --replay, the quotas the "
                   "replay starts from")
    add("--cluster", default="live", help="the cluster name in landed telemetry (default: live)")
    add("--dry-run", action="store_true",
                   help="shadow mode: log and export the intended alterations, alter nothing")
    add("--interval", type=float, metavar="SECONDS",
                   help="seconds between rounds (default: the config's check interval)")
    add("--rounds", type=int, metavar="N", help="stop after N rounds")
    add("--speed", default="max", metavar="N|max",
                   help="with --replay: N times real time between rounds, or as fast as possible (default)")
    add("--state", type=Path, metavar="FILE", help="keep base quotas and the last decision here")
    add("--landing", type=Path, metavar="DIR", help="append every round's telemetry here")
    add("--metrics-host", default="127.0.0.1", metavar="HOST", help="HTTP host (default 127.0.0.1)")
    add("--metrics-port", type=int, default=9464, metavar="PORT",
                   help="HTTP port (default 9464; 0: any free)")
    add("--notice-port", type=int, metavar="PORT",
                   help="open the PIP-385 notice channel on this TCP port (0: any free; default: no "
                   "channel): producers that connect are sent BrokerProduceQuotaExceeded while the factor "
                   "is below 1 (docs/notices.md)")
    add("--notice-host", default="127.0.0.1", metavar="HOST",
                   help="notice channel host (default 127.0.0.1)")
    add("--notice-receipt-wait-ms", type=int, default=100, metavar="MS",
                   help="how long a notice's receipt is awaited before it is late "
                   "(throttleProducerReceiptWaitTimeMillis; default 100)")
    add("--timeout", type=float, default=10.0, metavar="SECONDS",
                   help="Admin API request timeout (default 10)")
    add("--forecast-window", default="6h", metavar="DURATION",
                   help="the forecast fits the volume and partition observations of this last span, kept "
                   "in memory (90s, 30m, 6h, 7d or PT6H; default 6h)")
    add("--forecast-horizon", default="7d", metavar="DURATION",
                   help="a limit reached later than this is not approached (+Inf; default 7d)")


def options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> argparse.Namespace:
    """The options in force: the defaults, then a `--settings` file's, then the command line's.
    `ConfigError` for a key of the file that is not an option of serve, or a value its option
    does not take."""
    from quotaplane.core.properties import load_properties

    merged = dict(DEFAULTS)
    given = vars(args)
    path = given.get("settings")
    if path is not None:
        actions = {a.dest: a for a in parser._actions if a.option_strings and a.dest in DEFAULTS}
        for key, value in load_properties(path).items():
            dest = key.strip().replace("-", "_")
            action = actions.get(dest)
            if action is None or dest == "settings":
                raise ConfigError(f"{path}: {key}", value, "is not an option of quotaplane serve",
                                  "write an option without its leading dashes, "
                                  "e.g. bootstrap-servers=HOST:PORT")
            text = value.strip()
            if action.nargs == 0:
                if text.lower() not in ("true", "false"):
                    raise ConfigError(f"{path}: {key}", value, "must be true or false")
                merged[dest] = text.lower() == "true"
                continue
            try:
                merged[dest] = action.type(text) if action.type is not None else text  # type: ignore[operator]
            except (TypeError, ValueError):
                raise ConfigError(f"{path}: {key}", value,
                                  f"is not a valid {action.metavar or dest}") from None
    merged.update({k: v for k, v in given.items() if k in DEFAULTS})
    merged["func"] = given.get("func")
    return argparse.Namespace(**merged)


def _quota_entities(path: Path) -> dict[QuotaEntity, dict[str, float]]:
    from quotaplane.clients.config import load_client_quotas
    from quotaplane.clients.engine.entities import DEFAULT

    def name(part: Any) -> str | None:
        return "<default>" if part is DEFAULT else part

    config = load_client_quotas(path)
    return {(name(e.user), name(e.client_id)): dict(q) for e, q in config.quotas.items()}


def _speed(text: str) -> float | None:
    if text == "max":
        return None
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 1e-6 <= value <= 1e9:
        raise ConfigError("--speed", text, "must be max or a number from 0.000001 to 1000000000")
    return value


def _check_options(args: argparse.Namespace) -> None:
    if args.rounds is not None and args.rounds < 1:
        raise ConfigError("--rounds", args.rounds, "must be at least 1")
    if args.interval is not None and not 0 < args.interval <= 86_400 * 365:
        raise ConfigError("--interval", args.interval, "must be a positive number of seconds, at most a year")
    for option, port in (("--metrics-port", args.metrics_port), ("--notice-port", args.notice_port)):
        if port is not None and not 0 <= port <= 65535:
            raise ConfigError(option, port, "must be a TCP port, 0..65535 (0: any free)")
    if not 0 <= args.notice_receipt_wait_ms <= 3_600_000:
        raise ConfigError("--notice-receipt-wait-ms", args.notice_receipt_wait_ms, "must be 0..3600000")
    if args.replay is not None and args.bootstrap_servers is not None:
        raise ConfigError("--replay", args.replay, "drives the loop from files: give no --bootstrap-servers")


def run_serve(args: argparse.Namespace) -> int:
    from prometheus_client import CollectorRegistry

    from quotaplane.core.policy import RunConfigs
    from quotaplane.core.properties import load_properties
    from quotaplane.live.enforce import Enforcer
    from quotaplane.live.http import Endpoints
    from quotaplane.live.landing import Landing, read_back
    from quotaplane.live.metrics import LiveMetrics, LiveStatus
    from quotaplane.live.notice_channel import NoticeChannel
    from quotaplane.live.service import Options, Service, input_schemas, live_policies
    from quotaplane.live.sources import Source
    from quotaplane.live.sources.replay import InMemoryQuotas, ReplaySource, decision_key, read_rounds
    from quotaplane.live.state import StateFile
    from quotaplane.registry import POLICIES
    from quotaplane.storage.config import load_storage_config

    args = options(args, args.parser)
    if args.config is None:
        raise ConfigError("--config", "(none)", "needed: the storage quota configuration (.properties)")
    _check_options(args)
    config = load_storage_config(args.config)
    if config.evaluation not in ("cluster", "strimzi"):
        raise ConfigError(str(args.config), config.evaluation,
                          "the live service observes the whole cluster: use the cluster volume source "
                          "(or the strimzi dialect)")
    for warning in config.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    bootstrap = args.bootstrap_servers
    if bootstrap is None and args.replay is None:
        bootstrap = config.admin.get("bootstrap.servers")
    if args.replay is None and not bootstrap:
        raise ConfigError("--bootstrap-servers", "(none)", "needed: give the Kafka cluster, or --replay DIR",
                          "or set the configuration's admin client bootstrap.servers")
    interval = args.interval if args.interval is not None else config.check_interval_ms / 1000
    if args.replay is None and not interval > 0:
        raise ConfigError("--interval", interval,
                          "needed: the config's check interval is 0 (polling disabled)")
    speed = _speed(args.speed) if args.replay is not None else None
    configs = RunConfigs(storage=args.config, forecast_window=args.forecast_window,
                         forecast_horizon=args.forecast_horizon)
    loaded = {p.name: p.load_config(configs) for p in POLICIES if p.live is not None}
    base_quotas = _quota_entities(args.client_quotas) if args.client_quotas else None
    properties = {k: v for k, v in config.admin.items() if k != "bootstrap.servers"}
    properties.update(load_properties(args.command_config) if args.command_config else {})
    state_file = StateFile(args.state) if args.state else None
    if state_file is not None:
        state_file.check_writable()
    state = state_file.load() if state_file is not None else None
    landing = Landing(args.landing) if args.landing else None
    if landing is not None:
        landing.check_writable()
    schemas = input_schemas()
    replay = None
    if args.replay is not None:
        timed = [schemas[name] for p in POLICIES if p.live is not None for name in p.live.inputs
                 if name not in ("volumes", "membership", "collection_errors")]
        after = decision_key(state.last_decision) if state is not None and state.last_decision else None
        replay = ReplaySource(read_rounds(args.replay, config, list(dict.fromkeys(timed))), after)
        if replay.at >= len(replay.rounds):
            print(f"quotaplane serve: nothing left to replay in {args.replay} after the round of "
                  f"{state.last_decision['ts_ms'] if state and state.last_decision else '?'} ms "
                  f"({args.state} records {state.rounds if state else 0} rounds)", file=sys.stderr)
            return 0

    status = LiveStatus(args.cluster)
    registry = CollectorRegistry()
    admin: ClusterAdmin | None = None
    notices: NoticeChannel | None = None
    http: Endpoints | None = None
    sources: list[Source] = []
    try:
        if replay is not None:
            quotas: Any = InMemoryQuotas(base_quotas)
            sources.append(replay)
            gap = (lambda: None) if speed is None else (lambda: (replay.gap_s() or 0.0) / speed)
        else:
            from quotaplane.live.kafka_admin import KafkaClusterAdmin
            from quotaplane.live.sources.kafka import KafkaSource

            admin = KafkaClusterAdmin(bootstrap, properties, args.timeout)
            quotas = admin
            sources.append(KafkaSource(admin, args.cluster, config))
            gap = None
        policies = live_policies(loaded, {name for source in sources for name in source.inputs})
        if args.notice_port is not None:
            notices = NoticeChannel(args.notice_host, args.notice_port, args.notice_receipt_wait_ms,
                                    registry=registry)
            notices.start()
        registry.register(LiveMetrics(status, [p.decider for p in policies]))
        http = Endpoints(args.metrics_host, args.metrics_port, registry, status, interval or 1.0,
                         threading.Lock(), {p.part.endpoint: [] if p.name != "storage" else None
                                            for p in policies})
        service = Service(sources, policies, schemas, status,
                          Options(interval, args.rounds, args.dry_run, args.cluster), state=state,
                          state_file=state_file, landing=landing, notices=notices,
                          excluded_principals=config.excluded_principals)
        service.enforcer = Enforcer(quotas, service.state.bases, config.quotas.produce,
                                    config.excluded_principals, args.dry_run)
        service.lock = http.lock
        if base_quotas is not None and replay is None:
            service.state.bases.base.update({e: q.get("producer_byte_rate") for e, q in base_quotas.items()})
        memory = max([p.part.memory_ms(loaded[p.name]) for p in policies] or [0])
        if replay is not None:
            service.warm((i, rd.ts_ms, rd.rows) for i, rd in enumerate(replay.earlier(memory), start=1))
        elif landing is not None:  # a restart goes on with what its deciders remember (landed rounds)
            service.warm(read_back(landing.root, schemas, memory,
                                   lambda text: print(f"warning: {text}", file=sys.stderr)))
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: service.stop.set())
        http.start()
        print(f"quotaplane serve: /metrics on http://{args.metrics_host}:{http.port}/metrics "
              f"({'replay of ' + str(args.replay) if replay is not None else bootstrap})",
              file=sys.stderr, flush=True)
        if notices is not None:
            host, port = notices.address
            print(f"quotaplane serve: notice channel on {host}:{port} (receipts awaited "
                  f"{args.notice_receipt_wait_ms} ms)", file=sys.stderr, flush=True)
        return service.run(gap)
    except InputError:
        raise
    finally:
        if notices is not None:
            notices.stop()
        if http is not None:
            http.close()
        for source in sources:
            source.close()
