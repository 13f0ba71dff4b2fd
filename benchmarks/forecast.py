"""Forecast accuracy against the usual anchor, `predict_linear` over 6 h of available bytes.

For each forecast scenario of the simulator (`linear-fill`, `retention-steady`,
`accelerating-topic`) the simulated volumes are the ground truth: the first observation at or
past the hard limit is when the volume really crossed it. At every `--every` from one window after
the start, both methods forecast each volume that has not crossed yet, from the data up to then:

- quotaplane: `quotaplane.forecast.engine.volumes.forecast_volumes` (partition replicas, retention-
  and replication-aware), `seconds_to_hard`;
- the anchor: node exporter's `predict_linear(node_filesystem_avail_bytes[6h], t)` — the least-squares
  line of the available bytes over the window, evaluated at the forecast time (as Prometheus's
  `linearRegression` does), gives the time until the line meets the hard threshold.

Reported per scenario and method: the error of the time to the hard limit (|forecast - truth| /
truth; median and p90) where the truth is within the horizon, the crossings it missed (no
forecast within the horizon although the volume crossed), alerts "crosses within 24 h" and how many
were false (the volume did not cross within 24 h), and the lead time of the alerts before the real
crossings (from the first of an unbroken run of alerts up to the crossing).

`python -m benchmarks.forecast` writes `benchmarks/results/forecast-<date>.json` and the table in
docs/forecast.md; `--quick` runs shorter scenarios (results under `benchmarks/work/`).
"""

from __future__ import annotations

import argparse
import bisect
import json
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.machine import describe
from quotaplane.forecast.config import ForecastSettings
from quotaplane.forecast.engine.replicas import ReplicaPoint
from quotaplane.forecast.engine.timing import seconds_to
from quotaplane.forecast.engine.volumes import VolumePoint, forecast_volumes
from quotaplane.sim.run import generate, resolve
from quotaplane.storage.config import StorageConfig, parse_storage_config
from quotaplane.storage.engine.limits import breached, threshold_bytes
from quotaplane.storage.engine.volume import Volume

ROOT = Path(__file__).resolve().parents[1]
P = "client.quota.callback.static."
CONFIG = {
    P + "storage.volume.source": "cluster",
    P + "storage.perVolumeLimit.availableRatioBelow.soft": "0.5",
    P + "storage.perVolumeLimit.availableRatioBelow.hard": "0.35",
}
DAY_S = 86_400.0
ALERT_S = DAY_S
METHODS = ("quotaplane", "predict_linear")


@dataclass
class Series:
    """One volume's observations in time order, its hard threshold (available bytes) at each, and
    when it is at or past it."""

    ts: np.ndarray
    available: np.ndarray
    threshold: np.ndarray
    crossings: np.ndarray


@dataclass(frozen=True)
class Case:
    """A scenario and how its hard limit is set: the configured ratio for every volume (`margin`
    None), or per volume just below the lowest point it ever reaches (`margin` of its total), so
    that it never crosses: every alert is false."""

    scenario: str
    margin: float | None = None

    @property
    def label(self) -> str:
        if self.margin is None:
            return self.scenario
        return f"{self.scenario}, limit {self.margin:.0%} below each volume's lowest point"


CASES = (
    Case("linear-fill"),
    Case("retention-steady", 0.01),
    Case("retention-steady", 0.03),
    Case("accelerating-topic"),
)


def load(scenario: str, days: float | None) -> tuple[list[VolumePoint], list[ReplicaPoint]]:
    found, params = resolve(scenario, {"days": days} if days else None)
    volumes: list[VolumePoint] = []
    replicas: list[ReplicaPoint] = []
    for kind, table in generate(found.build(params), params.seed, ["volumes", "partition_sizes"]):
        c = table.to_pydict()
        if kind == "volumes":
            volumes += [
                VolumePoint(*r)
                for r in zip(
                    c["ts"],
                    c["cluster"],
                    c["broker_id"],
                    c["log_dir"],
                    c["total_bytes"],
                    c["available_bytes"],
                    strict=True,
                )
            ]
        else:
            replicas += [
                ReplicaPoint(*r)
                for r in zip(
                    c["ts"],
                    c["cluster"],
                    c["broker_id"],
                    c["log_dir"],
                    c["topic"],
                    c["partition"],
                    c["size_bytes"],
                    c["is_leader"],
                    strict=True,
                )
            ]
    volumes.sort(key=lambda p: p.ts_ms)
    replicas.sort(key=lambda p: p.ts_ms)
    return volumes, replicas


def series_of(
    volumes: Sequence[VolumePoint], config: StorageConfig, margin: float | None
) -> dict[tuple[str, int, str], Series]:
    assert config.hard is not None
    by_key: dict[tuple[str, int, str], list[VolumePoint]] = {}
    for p in volumes:
        by_key.setdefault(p.key, []).append(p)
    out = {}
    for key, points in by_key.items():
        ts = np.array([p.ts_ms for p in points], dtype=np.int64)
        available = np.array([p.available_bytes for p in points], dtype=np.float64)
        if margin is None:
            hard = config.hard
            threshold = np.array([threshold_bytes(hard, _volume(p)) for p in points])
            hit = np.array([breached(hard, _volume(p)) for p in points])
        else:
            lowest = float(available.min()) - margin * max(p.total_bytes for p in points)
            threshold = np.full(len(points), lowest)
            hit = available <= threshold
        out[key] = Series(ts, available, threshold, ts[hit])
    return out


def _volume(p: VolumePoint) -> Volume:
    return Volume(p.broker_id, p.log_dir, p.total_bytes, p.available_bytes)


def predict_linear_seconds(
    s: Series, at_ms: int, window_ms: int, threshold: float, horizon_s: float
) -> float | None:
    """Seconds until the least-squares line of the window's available bytes meets `threshold`."""
    lo = np.searchsorted(s.ts, at_ms - window_ms, side="right")
    hi = np.searchsorted(s.ts, at_ms, side="right")
    if hi - lo < 2:
        return None
    x = (s.ts[lo:hi] - at_ms) / 1000.0
    slope, intercept = np.polyfit(x, s.available[lo:hi], 1)
    if intercept <= threshold:
        return 0.0
    if slope >= 0:
        return None
    seconds = (threshold - intercept) / slope
    return float(seconds) if seconds <= horizon_s else None


def evaluate_case(
    case: Case, days: float | None, every_ms: int, settings: ForecastSettings
) -> dict[str, Any]:
    config = parse_storage_config(CONFIG)
    started = time.perf_counter()
    volumes, replicas = load(case.scenario, days)
    loaded = time.perf_counter() - started
    series = series_of(volumes, config, case.margin)
    v_ts = [p.ts_ms for p in volumes]
    r_ts = [p.ts_ms for p in replicas]
    start, end = v_ts[0], v_ts[-1]
    cases: list[dict[str, Any]] = []
    elapsed = {m: 0.0 for m in METHODS}
    at = start + settings.window_ms
    horizon = settings.horizon_seconds
    while at <= end:
        lo_v, hi_v = bisect.bisect_right(v_ts, at - settings.window_ms), bisect.bisect_right(v_ts, at)
        lo_r, hi_r = bisect.bisect_right(r_ts, at - settings.history_ms), bisect.bisect_right(r_ts, at)
        t0 = time.perf_counter()
        # the growth of each volume; the time to its threshold follows the engine's own rule
        forecasts = forecast_volumes(volumes[lo_v:hi_v], replicas[lo_r:hi_r], None, settings, at)
        growth = {
            (f.cluster, f.broker_id, f.log_dir): (
                f.available_bytes,
                f.growth_bytes_per_second,
                f.acceleration_bytes_per_second_squared,
            )
            for f in forecasts
        }
        elapsed["quotaplane"] += time.perf_counter() - t0
        for key, s in series.items():
            i = int(np.searchsorted(s.ts, at, side="right")) - 1
            if i < 0 or key not in growth or (len(s.crossings) and s.crossings[0] <= at):
                continue  # not observed in the window, or already crossed: nothing left to forecast
            available, g, acceleration = growth[key]
            ours = seconds_to(False, available - s.threshold[i], g, horizon, acceleration)
            t0 = time.perf_counter()
            theirs = predict_linear_seconds(s, at, settings.window_ms, s.threshold[i], horizon)
            elapsed["predict_linear"] += time.perf_counter() - t0
            truth = (s.crossings[0] - at) / 1000.0 if len(s.crossings) else None
            cases.append(
                {
                    "at": at,
                    "volume": key,
                    "truth": truth,
                    "remaining": (end - at) / 1000.0,
                    "quotaplane": ours,
                    "predict_linear": theirs,
                }
            )
        at += every_ms
    result = {m: score(cases, m, horizon) for m in METHODS}
    for m in METHODS:
        result[m]["seconds"] = round(elapsed[m], 3)
    crossed = sum(1 for s in series.values() if len(s.crossings) and s.crossings[0] > start)
    return {
        "scenario": case.label,
        "margin": case.margin,
        "days": days,
        "volumes": len(series),
        "volumes_crossing": crossed,
        "forecast_times": len({c["at"] for c in cases}),
        "cases": len(cases),
        "simulate_seconds": round(loaded, 2),
        "rows": {"volumes": len(volumes), "partition_sizes": len(replicas)},
        **result,
    }


def _quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return float(np.quantile(np.array(values), q))


def score(cases: list[dict[str, Any]], method: str, horizon_s: float) -> dict[str, Any]:
    """Error, misses, alerts, false alerts and lead times of one method (module docstring)."""
    errors: list[float] = []
    missed = 0
    for c in cases:
        if c["truth"] is None or c["truth"] > horizon_s or c["truth"] <= 0:
            continue
        if c[method] is None:
            missed += 1
        else:
            errors.append(abs(c[method] - c["truth"]) / c["truth"])
    judged = [
        c for c in cases if c["remaining"] >= ALERT_S or (c["truth"] is not None and c["truth"] <= ALERT_S)
    ]
    alerts = [c for c in judged if c[method] is not None and c[method] <= ALERT_S]
    false = [c for c in alerts if c["truth"] is None or c["truth"] > ALERT_S]
    leads = lead_times(cases, method)
    return {
        "error_median": _quantile(errors, 0.5),
        "error_p90": _quantile(errors, 0.9),
        "errors": len(errors),
        "missed": missed,
        "alerts": len(alerts),
        "false_alerts": len(false),
        "false_alert_rate": (len(false) / len(alerts)) if alerts else None,
        "lead_hours_median": None if not leads else statistics.median(leads) / 3600.0,
        "crossings_alerted": len(leads),
    }


def lead_times(cases: list[dict[str, Any]], method: str) -> list[float]:
    """Per volume that crossed: seconds from the first of the unbroken run of alerts that reaches
    the crossing (the last forecast time before it) to the crossing."""
    by_volume: dict[Any, list[dict[str, Any]]] = {}
    for c in cases:
        if c["truth"] is not None:
            by_volume.setdefault(c["volume"], []).append(c)
    leads = []
    for runs in by_volume.values():
        runs.sort(key=lambda c: c["at"])
        first = None
        for c in reversed(runs):
            if c[method] is not None and c[method] <= ALERT_S:
                first = c
            else:
                break
        if first is not None:
            leads.append(first["truth"])
    return leads


def render(result: dict[str, Any]) -> list[str]:
    lines = [
        "| scenario | method | error median | error p90 | missed | alerts | false alerts | "
        "false-alert rate | crossings alerted | lead median (h) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]

    def num(v: float | None, fmt: str) -> str:
        return "—" if v is None else format(v, fmt)

    for s in result["scenarios"]:
        for m in METHODS:
            r = s[m]
            lines.append(
                f"| {s['scenario']} | {m} | {num(r['error_median'], '.2f')} | {num(r['error_p90'], '.2f')} | "
                f"{r['missed']} | {r['alerts']} | {r['false_alerts']} | "
                f"{num(r['false_alert_rate'], '.2f')} | "
                f"{r['crossings_alerted']} / {s['volumes_crossing']} | {num(r['lead_hours_median'], '.1f')} |"
            )
    return lines


def update_docs(result: dict[str, Any], doc: Path) -> None:
    begin, end = "<!-- forecast-benchmark:begin -->", "<!-- forecast-benchmark:end -->"
    text = doc.read_text(encoding="utf-8")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    m = result["machine"]
    body = [
        f"Measured {result['date']} with `{result['command']}` on {m.get('cores')} cores "
        f"(load average {m.get('load_average')}); forecast every {result['every_minutes']} min, "
        f"window {result['window_hours']} h, horizon {result['horizon_days']} d.",
        "",
        *render(result),
    ]
    doc.write_text(head + begin + "\n" + "\n".join(body) + "\n" + end + tail, encoding="utf-8")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.forecast", description=__doc__.splitlines()[0])
    p.add_argument("--scenarios", help="only these scenarios (comma-separated; default: all)")
    p.add_argument("--days", type=float, help="override the scenarios' span in days")
    p.add_argument("--every-minutes", type=int, default=30)
    p.add_argument("--lookback-hours", type=float, default=24.0, help="the forecast's replica lookback")
    p.add_argument("--quick", action="store_true", help="1.5-day scenarios, results under benchmarks/work/")
    p.add_argument("--results-dir", type=Path)
    p.add_argument("--docs", default=str(ROOT / "docs" / "forecast.md"), help="page to update, or 'none'")
    return p.parse_args(argv)


def run(args: argparse.Namespace) -> dict[str, Any]:
    settings = ForecastSettings(lookback_ms=int(args.lookback_hours * 3_600_000))
    days = args.days if args.days is not None else (1.5 if args.quick else None)
    wanted = {s.strip() for s in args.scenarios.split(",")} if args.scenarios else None
    cases = [c for c in CASES if wanted is None or c.scenario in wanted]
    result = {
        "date": date.today().isoformat(),
        "command": "python -m benchmarks.forecast" + (" --quick" if args.quick else ""),
        "machine": describe(),
        "every_minutes": args.every_minutes,
        "window_hours": settings.window_ms / 3_600_000,
        "horizon_days": settings.horizon_ms / 86_400_000,
        "scenarios": [evaluate_case(c, days, args.every_minutes * 60_000, settings) for c in cases],
    }
    folder = args.results_dir or (ROOT / "benchmarks" / ("work/results" if args.quick else "results"))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"forecast-{result['date']}.json").write_text(
        json.dumps(result, indent=2) + "\n", encoding="utf-8"
    )
    if args.docs != "none" and not args.quick:
        update_docs(result, Path(args.docs))
    print("\n".join(render(result)))
    return result


if __name__ == "__main__":
    run(parse_args())
