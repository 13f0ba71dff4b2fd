"""`quotaplane forecast`: time-to-limit forecasts with the reference engine (no Spark).

Reads `volumes` and `partition_sizes` (and `backlog_snapshots` with `--backlog-policies`) from a
telemetry directory and prints one JSON line per volume, then one per backlog topic with a quota
(docs/forecast.md). `--metrics FILE` also writes the forecast metrics.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from quotaplane.core.errors import ConfigError, InputError
from quotaplane.core.fields import FieldProblem, convert
from quotaplane.core.policy import find_input
from quotaplane.core.telemetry_files import read_input
from quotaplane.forecast.config import ForecastSettings, settings_of
from quotaplane.forecast.engine.backlog import BacklogForecast, BacklogTick, forecast_backlogs
from quotaplane.forecast.engine.replicas import ReplicaPoint
from quotaplane.forecast.engine.volumes import VolumeForecast, VolumePoint, forecast_volumes
from quotaplane.forecast.records import PARTITION_SIZES
from quotaplane.storage.config import StorageConfig, load_storage_config
from quotaplane.storage.records import VOLUMES


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("forecast", help="when each volume and backlog reaches its limits (reference engine)",
                       description="Print one JSON line per volume (seconds to its soft limit, hard limit "
                       "and full, with a band and the topics causing the growth), then one per Pulsar "
                       "topic with a backlog quota (seconds to the quota). Times are seconds from --at; "
                       "null where the limit is not reached within the horizon. See docs/forecast.md.")
    p.add_argument("--telemetry", required=True, type=Path, metavar="DIR",
                   help="telemetry directory (volumes, partition_sizes, backlog_snapshots)")
    p.add_argument("--config", type=Path, metavar="FILE", help="storage quota configuration (.properties)")
    p.add_argument("--backlog-policies", type=Path, metavar="FILE", help="Pulsar backlog policies (JSON)")
    p.add_argument("--at", metavar="TIME",
                   help="forecast time: epoch ms or ISO-8601 (default: the last observation of each input)")
    p.add_argument("--window", default="6h", help="fit window (default 6h)")
    p.add_argument("--horizon", default="7d", help="how far ahead a limit counts (default 7d)")
    p.add_argument("--lookback", default="24h",
                   help="how far back replica sizes show retention drops and troughs (default 24h)")
    p.add_argument("--metrics", metavar="FILE",
                   help="also write the forecast metrics in Prometheus text format to FILE ('-': stderr)")
    p.set_defaults(func=run)


def parse_at(text: str | None) -> int | None:
    """`--at` as epoch milliseconds (digits) or an ISO-8601 timestamp, with the telemetry's rules."""
    if text is None:
        return None
    value: str | int = text.strip()
    if isinstance(value, str) and value.lstrip("-").isdigit():
        value = int(value)
    try:
        return int(convert("time_ms", value))
    except FieldProblem as problem:
        raise ConfigError("--at", text, problem.reason) from None


def _records(telemetry: Path, name: str, schema: Any) -> list[dict[str, Any]]:
    path = find_input(telemetry, name)
    return list(read_input(Path(path), schema)) if path else []


def volume_points(telemetry: Path) -> list[VolumePoint]:
    return [VolumePoint.from_record(r) for r in _records(telemetry, "volumes", VOLUMES)]


def replica_points(telemetry: Path) -> list[ReplicaPoint]:
    return [ReplicaPoint.from_record(r) for r in _records(telemetry, "partition_sizes", PARTITION_SIZES)]


def backlog_ticks(telemetry: Path, policies_path: Path) -> list[BacklogTick]:
    """The backlog policy's own checks of every tick (reference engine), as forecast input."""
    from quotaplane.backlog.config import load_backlog_policies
    from quotaplane.backlog.engine.evaluate import evaluate
    from quotaplane.backlog.engine.model import Snapshot
    from quotaplane.backlog.records import BACKLOG_SNAPSHOTS

    policies = load_backlog_policies(policies_path)
    snapshots = [Snapshot.from_record(r) for r in _records(telemetry, "backlog_snapshots", BACKLOG_SNAPSHOTS)]
    return [BacklogTick(t.ts_ms, t.topic, t.namespace, t.backlog_size_bytes, t.backlog_age_seconds,
                        t.quotas.size_limit, t.quotas.time_limit) for t in evaluate(policies, snapshots)]


def forecast(telemetry: Path, config: StorageConfig | None, policies: Path | None, settings: ForecastSettings,
             at_ms: int | None) -> tuple[list[VolumeForecast], list[BacklogForecast], list[str]]:
    """The forecasts, and why an input with rows gave none (nothing observed in the window)."""
    if not telemetry.is_dir():
        raise InputError(str(telemetry), "--telemetry", str(telemetry), "is not a directory")
    points = volume_points(telemetry)
    volumes = forecast_volumes(points, replica_points(telemetry), config, settings, at_ms)
    ticks = backlog_ticks(telemetry, policies) if policies else []
    backlogs = forecast_backlogs(ticks, settings, at_ms)
    notes = [_nothing_in_window(name, [p.ts_ms for p in rows], settings.window_ms, at_ms)
             for name, rows in (("volumes", points), ("backlog_snapshots", ticks))]
    return volumes, backlogs, [n for n in notes if n]


def _nothing_in_window(name: str, times: list[int], window_ms: int, at_ms: int | None) -> str | None:
    """Why an input with rows has no forecast: none of them in `(at - window, at]`."""
    if at_ms is None or not times or any(at_ms - window_ms < t <= at_ms for t in times):
        return None  # without --at the window ends at the last observation
    return (f"{name}: nothing observed in the window ({_iso(at_ms - window_ms)}, {_iso(at_ms)}]; "
            f"its observations span {_iso(min(times))} to {_iso(max(times))}")


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def run(args: argparse.Namespace) -> int:
    settings = settings_of(args.window, args.horizon, args.lookback)
    at_ms = parse_at(args.at)
    config = load_storage_config(args.config) if args.config else None
    volumes, backlogs, notes = forecast(args.telemetry, config, args.backlog_policies, settings, at_ms)
    for note in notes:
        print(f"warning: {note}", file=sys.stderr)
    out = sys.stdout
    for row in [*(v.as_dict() for v in volumes), *(b.as_dict() for b in backlogs)]:
        out.write(json.dumps(row) + "\n")
    out.flush()
    if args.metrics:
        from prometheus_client import CollectorRegistry

        from quotaplane.core import exposition
        from quotaplane.forecast.metrics import ForecastMetrics

        registry = CollectorRegistry()
        registry.register(ForecastMetrics(volumes, backlogs))
        if args.metrics == "-":
            print(exposition.render(registry), file=sys.stderr, end="")
        else:
            exposition.write(registry, args.metrics)
    return 0
