"""`quotaplane simulate`: write deterministic telemetry of a scenario (see docs/simulator.md)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from quotaplane.core.errors import ConfigError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "simulate",
        help="generate deterministic cluster telemetry for a scenario",
        description="Generate realistic, deterministic telemetry (same seed and arguments, same bytes) "
        "in the layout `quotaplane run --telemetry` reads: DIR/<kind>/part-*.<ext> and DIR/manifest.json. "
        "Options left out take the scenario's defaults (see --list).",
    )
    p.add_argument("--scenario", help="the scenario (see --list)")
    p.add_argument("--out", type=Path, help="the telemetry directory to write")
    p.add_argument("--list", action="store_true", help="list the scenarios and their defaults, then exit")
    p.add_argument("--seed", type=int, help="random seed (0..2147483647)")
    p.add_argument("--brokers", type=int, help="number of brokers")
    p.add_argument("--log-dirs", type=int, help="log dirs (JBOD volumes) per broker")
    p.add_argument("--days", type=float, help="time span in days")
    p.add_argument("--interval-seconds", type=int, help="seconds between storage collection rounds")
    p.add_argument("--clients", type=int, help="Kafka client ids (producers, consumers, admin clients)")
    p.add_argument("--topics", type=int, help="Kafka topics")
    p.add_argument("--pulsar-topics", type=int, help="Pulsar topics (backlog snapshots)")
    p.add_argument("--start", help="start of the span, ISO-8601 (default 2024-06-03T00:00:00Z)")
    p.add_argument("--requests-per-client-per-minute", type=float,
                   help="requests per client and broker connection per minute (1..600): bounds the "
                   "request rows")
    p.add_argument("--max-request-bytes", type=int,
                   help="split a minute's bytes into more requests so none is larger (rows then grow "
                   "with traffic)")
    p.add_argument("--window-start-hours", type=float,
                   help="start of the request and backlog window, in hours after the start")
    p.add_argument("--window-hours", type=float, help="length of that window (default: to the end)")
    p.add_argument("--backlog-check-seconds", type=int,
                   help="seconds between backlog snapshots (check ticks)")
    p.add_argument("--partition-interval-seconds", type=int,
                   help="seconds between partition_sizes rounds (a multiple of --interval-seconds)")
    p.add_argument("--format", default="jsonl", choices=["jsonl", "csv", "parquet"], help="file format")
    p.add_argument("--kinds", help="comma-separated kinds to write (default: the scenario's, most: all): "
                   "volumes, membership, collection_errors, partition_sizes, client_requests, "
                   "topic_requests, backlog_snapshots, producer_traffic")
    p.add_argument("--chunk-rows", type=int, default=500_000,
                   help="rows generated at a time (memory bound; does not change the output)")
    p.add_argument("--part-rows", type=int, default=5_000_000,
                   help="rows per part file (at chunk boundaries)")
    p.set_defaults(func=run)


PARAMETERS = ("seed", "brokers", "log_dirs", "days", "interval_seconds", "clients", "topics", "pulsar_topics",
              "start", "requests_per_client_per_minute", "max_request_bytes", "window_start_hours",
              "window_hours", "backlog_check_seconds", "partition_interval_seconds")


def run(args: argparse.Namespace) -> int:
    from quotaplane.sim.run import simulate
    from quotaplane.sim.scenarios import SCENARIOS

    if args.list:
        for name in sorted(SCENARIOS):
            s = SCENARIOS[name]
            d = s.defaults
            print(f"{name}: {s.summary}")
            print(f"    defaults: --brokers {d.brokers} --log-dirs {d.log_dirs} --days {d.days:g} "
                  f"--interval-seconds {d.interval_seconds} --clients {d.clients} --topics {d.topics} "
                  f"--pulsar-topics {d.pulsar_topics} --partition-interval-seconds "
                  f"{d.partition_interval_seconds} --seed {d.seed}")
            if s.kinds is not None:
                print(f"    kinds: {','.join(s.kinds)}")
        return 0
    if not args.scenario:
        raise ConfigError("--scenario", None, "is required", "see --list")
    if args.out is None:
        raise ConfigError("--out", None, "is required")
    if args.chunk_rows < 1:
        raise ConfigError("--chunk-rows", args.chunk_rows, "must be at least 1")
    if args.part_rows < 1:
        raise ConfigError("--part-rows", args.part_rows, "must be at least 1")
    started = time.perf_counter()
    manifest = simulate(args.scenario, args.out, {k: getattr(args, k) for k in PARAMETERS}, kinds=args.kinds,
                        fmt=args.format, chunk_rows=args.chunk_rows, part_rows=args.part_rows)
    elapsed = time.perf_counter() - started
    rows = manifest["rows"]
    total = sum(rows.values())
    for kind, count in rows.items():
        print(f"  {kind}: {count} rows")
    print(f"wrote {total} rows to {args.out} in {elapsed:.1f}s ({total / max(elapsed, 1e-9):,.0f} rows/s)",
          file=sys.stdout)
    return 0
