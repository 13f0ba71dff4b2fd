"""`quotaplane serve`: the live control loop for one Kafka cluster, or a replay of recorded telemetry.

Everything the service is given is checked before it touches the cluster (exit 2, one line, nothing
altered): the storage configuration, the mode (`--bootstrap-servers` or `--replay`), `--command-config`,
`--client-quotas`, that `--state` and `--landing` can be written, that the metrics port and the
notice port are free, and that the bootstrap servers answer. See docs/live.md.
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
        description="Every round: DescribeCluster and DescribeLogDirs (v4) of a running Kafka cluster "
        "(or the next round of recorded telemetry with --replay), the storage throttle factor from the "
        "reference engine, AlterClientQuotas to scale the produce quotas, the volumes' time-to-limit "
        "forecast, /metrics, /healthz, /decision and /forecast.")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--bootstrap-servers", metavar="HOST:PORT", help="the Kafka cluster to protect")
    source.add_argument("--replay", type=Path, metavar="TELEMETRY_DIR",
                        help="drive the loop from recorded telemetry instead of a cluster")
    p.add_argument("--config", required=True, type=Path, help="storage quota configuration (.properties)")
    p.add_argument("--command-config", type=Path, metavar="FILE",
                   help="Admin client properties (security.protocol, sasl.*, ssl.*), as kafka-configs.sh "
                   "takes them")
    p.add_argument("--client-quotas", type=Path, metavar="FILE",
                   help="base client quotas (JSON or kafka-configs text); with --replay, the quotas the "
                   "replay starts from")
    p.add_argument("--cluster", default="live", help="the cluster name in landed telemetry (default: live)")
    p.add_argument("--dry-run", action="store_true",
                   help="shadow mode: log and export the intended alterations, alter nothing")
    p.add_argument("--interval", type=float, metavar="SECONDS",
                   help="seconds between rounds (default: the config's check interval)")
    p.add_argument("--rounds", type=int, metavar="N", help="stop after N rounds")
    p.add_argument("--speed", default="max", metavar="N|max",
                   help="with --replay: N times real time between rounds, or as fast as possible (default)")
    p.add_argument("--state", type=Path, metavar="FILE", help="keep base quotas and the last decision here")
    p.add_argument("--landing", type=Path, metavar="DIR", help="append every round's telemetry here")
    p.add_argument("--metrics-host", default="127.0.0.1", help="HTTP host (default 127.0.0.1)")
    p.add_argument("--metrics-port", type=int, default=9464, help="HTTP port (default 9464; 0: any free)")
    p.add_argument("--notice-port", type=int, metavar="PORT",
                   help="open the PIP-385 notice channel on this TCP port (0: any free; default: no "
                   "channel): producers that connect are sent BrokerProduceQuotaExceeded while the factor "
                   "is below 1 (docs/notices.md)")
    p.add_argument("--notice-host", default="127.0.0.1", help="notice channel host (default 127.0.0.1)")
    p.add_argument("--notice-receipt-wait-ms", type=int, default=100, metavar="MS",
                   help="how long a notice's receipt is awaited before it is late "
                   "(throttleProducerReceiptWaitTimeMillis; default 100)")
    p.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                   help="Admin API request timeout (default 10)")
    p.add_argument("--forecast-window", default="6h", metavar="DURATION",
                   help="the forecast fits the volume and partition observations of this last span, kept "
                   "in memory (90s, 30m, 6h, 7d or PT6H; default 6h)")
    p.add_argument("--forecast-horizon", default="7d", metavar="DURATION",
                   help="a limit reached later than this is not approached (+Inf; default 7d)")
    p.set_defaults(func=run_serve)


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
    if not value > 0:
        raise ConfigError("--speed", text, "must be a positive number or max")
    return value


def run_serve(args: argparse.Namespace) -> int:
    from prometheus_client import CollectorRegistry

    from quotaplane.core.properties import load_properties
    from quotaplane.forecast.config import settings_of
    from quotaplane.live.collect import KafkaCollector
    from quotaplane.live.forecast import ForecastWindow
    from quotaplane.live.http import Endpoints
    from quotaplane.live.landing import Landing
    from quotaplane.live.metrics import LiveMetrics, LiveStatus
    from quotaplane.live.notice_channel import NoticeChannel
    from quotaplane.live.replay import InMemoryQuotas, read_recorded
    from quotaplane.live.service import Options, Service, kafka_source, replay_source
    from quotaplane.live.state import StateFile
    from quotaplane.storage.config import load_storage_config

    config = load_storage_config(args.config)
    if config.evaluation not in ("cluster", "strimzi"):
        raise ConfigError(str(args.config), config.evaluation,
                          "the live service observes the whole cluster: use the cluster volume source "
                          "(or the strimzi dialect)")
    for warning in config.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if args.rounds is not None and args.rounds < 1:
        raise ConfigError("--rounds", args.rounds, "must be at least 1")
    interval = args.interval if args.interval is not None else config.check_interval_ms / 1000
    if args.interval is not None and not args.interval > 0:
        raise ConfigError("--interval", args.interval, "must be a positive number of seconds")
    if args.replay is None and not interval > 0:
        raise ConfigError("--interval", interval,
                          "needed: the config's check interval is 0 (polling disabled)")
    speed = _speed(args.speed) if args.replay is not None else None
    if args.notice_port is not None and not 0 <= args.notice_port <= 65535:
        raise ConfigError("--notice-port", args.notice_port, "must be a TCP port, 0..65535 (0: any free)")
    if args.notice_receipt_wait_ms < 0:
        raise ConfigError("--notice-receipt-wait-ms", args.notice_receipt_wait_ms, "must be >= 0")
    settings = settings_of(args.forecast_window, args.forecast_horizon, prefix="--forecast-")
    base_quotas = _quota_entities(args.client_quotas) if args.client_quotas else None
    properties = load_properties(args.command_config) if args.command_config else {}
    state = StateFile(args.state) if args.state else None
    if state is not None:
        state.check_writable()
        state.load()
    landing = Landing(args.landing) if args.landing else None
    if landing is not None:
        landing.check_writable()
    recorded = read_recorded(args.replay, config) if args.replay is not None else None
    rounds = recorded.rounds if recorded is not None else None
    window = ForecastWindow(config, settings)

    status = LiveStatus(config, args.cluster)
    registry = CollectorRegistry()
    registry.register(LiveMetrics(status))
    http = Endpoints(args.metrics_host, args.metrics_port, registry, status, interval or 1.0,
                     threading.Lock())
    admin: ClusterAdmin | None = None
    notices: NoticeChannel | None = None
    try:
        if args.notice_port is not None:
            notices = NoticeChannel(args.notice_host, args.notice_port, args.notice_receipt_wait_ms,
                                    registry=registry)
            notices.start()
        done = state.load().rounds if state is not None else 0
        if recorded is not None and rounds is not None:
            quotas: ClusterAdmin = InMemoryQuotas(base_quotas)  # type: ignore[assignment]
            # a restarted replay resumes after its last round, its forecast window refilled up to it
            after = rounds[min(done, len(rounds)) - 1].ts if done and rounds else None
            if after is not None:
                window.add([v for v in recorded.volumes if v.ts_ms <= after],
                           [r for r in recorded.replicas if r.ts_ms <= after])
            source, gap_of = replay_source(rounds[done:], recorded.volumes, recorded.replicas, after)
            gap = (lambda: None) if speed is None else (lambda: (gap_of() or 0.0) / speed)
        else:
            from quotaplane.live.kafka_admin import KafkaClusterAdmin

            if landing is not None:  # a restart goes on with the window it had (landed rounds)
                window.warm(landing.root)
            admin = KafkaClusterAdmin(args.bootstrap_servers, properties, args.timeout)
            quotas = admin
            source, gap = kafka_source(KafkaCollector(admin, args.cluster, config)), None
        service = Service(config, source, quotas, status, Options(interval, args.rounds, args.dry_run),
                          state, landing, forecast=window, notices=notices)
        service.lock = http.lock
        if base_quotas is not None and rounds is None:
            service.state.bases.base.update(
                {e: q.get("producer_byte_rate") for e, q in base_quotas.items()})
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: service.stop.set())
        http.start()
        print(f"quotaplane serve: /metrics on http://{args.metrics_host}:{http.port}/metrics "
              f"({'replay of ' + str(args.replay) if rounds is not None else args.bootstrap_servers})",
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
        http.close()
        if admin is not None:
            admin.close()
