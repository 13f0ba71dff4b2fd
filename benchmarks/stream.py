"""`python -m benchmarks.stream`: `quotaplane stream`'s sustained rows/s and its latency, per policy.

For each tier (the benchmark's `fleet` datasets at 1x) and policy, the policy's inputs over the
first `--minutes` of its event time are cut into `--files` windows (one JSON Lines file per input
and window, as the live service lands them). Then, in one warm SparkSession:

- **warm-up** (unless `--no-warmup`): one untimed catch-up and batch run over the same files, so
  that no policy's figures depend on its place in the run (the first run of a plan in a JVM pays
  its class loading, code generation and JIT compilation, the Python workers' start);
- **catch-up**: every window landed at once, the stream reading one file per input and
  micro-batch: sustained rows/s = rows / the micro-batches' own seconds (the commit records),
  from the second micro-batch on (the first also pays Spark's code generation and the Python
  workers' start; it is recorded apart), the flush excluded;
- **batch baseline**: `quotaplane run`'s stage of the same policy over the same files, in the same
  session: rows/s = rows / the stage's step seconds. The ratio stream / batch is the figure of
  merit (1.0: as fast as the batch run);
- **latency**: a feeder lands one window every `--land-every` seconds while the stream runs
  (trigger 0.5 s, watermark delay 0): the tier's own rows, faster than the tier's event time by
  `window / land-every` (recorded as `speedup`); a window's latency is from its landing to the end
  of the first commit whose watermark passes its last event (its last rows are final only when a
  later row moves the watermark past them; the last window's, at the flush). Median and p99
  (nearest rank) over the windows.

Writes `benchmarks/results/stream-<tier>-<date>.json` (`--quick`: `benchmarks/work/results/`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import sys
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq

from benchmarks import configs as policy_configs
from benchmarks.datasets import ensure
from benchmarks.machine import describe
from benchmarks.tiers import TIERS, Tier
from quotaplane.core.policy import RunConfigs
from quotaplane.core.runner import run_pipeline
from quotaplane.registry import POLICIES, policy
from quotaplane.stream.plan import streamed_policies
from quotaplane.stream.run import StreamOptions, run_stream

HERE = Path(__file__).resolve().parent
WORK = HERE / "work" / "stream"
RESULTS = HERE / "results"
STREAMED = ("storage", "clients", "topics", "backlog")
#: the configuration each policy needs, by `RunConfigs` field
#: event time per policy by default: enough rows for a steady rate (storage and backlog rows are
#: sparse: a round or a check every 30 s)
MINUTES = {"storage": 360.0, "backlog": 360.0, "clients": 10.0, "topics": 20.0}
CONFIG_FIELD = {"storage": "storage", "clients": "client_quotas", "topics": "topics",
                "backlog": "backlog_policies"}


@dataclass(frozen=True)
class Slice:
    landing: Path
    rows: int
    windows: list[tuple[int, int]]  # per window: rows, last event time (ms)
    window_ms: int


def cut(dataset_path: Path, name: str, landing: Path, minutes: float, files: int) -> Slice:
    """The policy's inputs over the first `minutes` of its first input's event time (at most up to
    its last event), in `files` windows of JSON Lines (rows in time order), landed under `landing`
    with ascending mtimes."""
    inputs = [(i.name, policy(name).incremental.time_fields[i.name]) for i in policy(name).inputs
              if i.name in policy(name).incremental.time_fields]
    tables = {n: pq.read_table(dataset_path / n) for n, _ in inputs if (dataset_path / n).exists()}
    first_name, first_time = inputs[0]
    start = pc.min(tables[first_name][first_time]).as_py()
    start = start if isinstance(start, int) else int(start.timestamp() * 1000)
    end = max(_max_time(tables[n], t) for n, t in inputs if n in tables)
    span = min(int(minutes * 60_000), end - start + 1)  # no empty windows past the data's end
    window_ms = math.ceil(span / files)
    rows = 0
    windows = [[0, 0] for _ in range(files)]
    for n, t in inputs:
        if n not in tables:
            continue
        table = tables[n]
        times = table[t].cast("int64") if str(table.schema.field(t).type) != "int64" else table[t]
        table = table.append_column("_t", times)
        inside = pc.and_(pc.greater_equal(table["_t"], start), pc.less(table["_t"], start + span))
        table = table.filter(inside)
        table = table.sort_by("_t")
        folder = landing / n
        folder.mkdir(parents=True, exist_ok=True)
        for k in range(files):
            lo, hi = start + k * window_ms, start + (k + 1) * window_ms
            part = table.filter(pc.and_(pc.greater_equal(table["_t"], lo), pc.less(table["_t"], hi)))
            if part.num_rows == 0:
                continue
            ts = part["_t"].to_pylist()
            records = part.drop_columns(["_t"]).to_pylist()
            path = folder / f"w{k:04d}.jsonl"
            with path.open("w", encoding="utf-8") as out:
                for r in records:
                    out.write(json.dumps(r, default=str) + "\n")
            os.utime(path, (1_700_000_000 + k, 1_700_000_000 + k))
            windows[k][0] += part.num_rows
            windows[k][1] = max(windows[k][1], ts[-1])
            rows += part.num_rows
    return Slice(landing, rows, [(r, t) for r, t in windows], window_ms)


def _max_time(table: Any, column: str) -> int:
    last = pc.max(table[column]).as_py()
    return last if isinstance(last, int) else int(last.timestamp() * 1000)


def _only(configs: RunConfigs, name: str) -> RunConfigs:
    keep = {CONFIG_FIELD[name]: getattr(configs, CONFIG_FIELD[name])}
    if name == "clients":
        keep["storage"] = None  # the client quotas alone: no storage decisions to wait for
    return RunConfigs(**keep)


def catch_up(spark: Any, sl: Slice, configs: RunConfigs, out: Path) -> dict[str, Any]:
    options = StreamOptions(sl.landing, out, out / "_checkpoint", trigger_seconds=0.1, until_idle_seconds=1.0,
                            watermark_delay_ms=0, max_files_per_trigger=1)
    started = time.perf_counter()
    log = run_stream(options, streamed_policies(POLICIES, configs), display=None, spark=spark)
    wall = time.perf_counter() - started
    commits = [c for c in log.records() if not c.flushed]
    steady = commits[1:]
    rows = sum(c.rows for c in steady)
    seconds = sum(c.seconds for c in steady)
    return {"rows": sum(c.rows for c in commits), "micro_batches": len(commits), "steady_rows": rows,
            "steady_seconds": round(seconds, 3), "rows_per_second": rows / seconds if seconds else None,
            "wall_seconds": round(wall, 3), "batch_rows": [c.rows for c in commits],
            "batch_seconds": [c.seconds for c in commits]}


def batch_baseline(spark: Any, sl: Slice, configs: RunConfigs, name: str, out: Path) -> dict[str, Any]:
    outcome = run_pipeline(sl.landing, configs, out, [policy(name)], stream=None, spark=spark)
    steps = outcome.summary["run"]["stage_seconds"]
    seconds = sum(v for k, v in steps.items() if not k.startswith(("starting Spark", "writing the report")))
    return {"rows": sl.rows, "seconds": round(seconds, 3), "rows_per_second": sl.rows / seconds,
            "steps": steps}


def latency(spark: Any, sl: Slice, configs: RunConfigs, out: Path, interval: float) -> dict[str, Any]:
    landing = out / "landing"
    landed: list[float] = []
    names = sorted(p.name for p in sl.landing.iterdir())

    def feed() -> None:
        for k in range(len(sl.windows)):
            for n in names:
                src = sl.landing / n / f"w{k:04d}.jsonl"
                if src.exists():
                    (landing / n).mkdir(parents=True, exist_ok=True)
                    tmp = landing / n / f".w{k:04d}.tmp"
                    shutil.copyfile(src, tmp)
                    os.replace(tmp, landing / n / f"w{k:04d}.jsonl")
            landed.append(time.time())
            time.sleep(interval)

    for n in names:
        (landing / n).mkdir(parents=True, exist_ok=True)
    feeder = threading.Thread(target=feed, daemon=True)
    options = StreamOptions(landing, out / "out", out / "out" / "_checkpoint", trigger_seconds=0.5,
                            until_idle_seconds=max(3.0, 2 * interval), watermark_delay_ms=0)
    feeder.start()
    log = run_stream(options, streamed_policies(POLICIES, configs), display=None, spark=spark)
    feeder.join()
    commits = log.records()
    waits = []
    for (rows, last), at in zip(sl.windows, landed, strict=False):
        if rows == 0:
            continue
        done = next((c for c in commits
                     if c.flushed or (c.watermark_ms is not None and c.watermark_ms > last)), None)
        if done is not None:
            waits.append(done.finished_unix - at)
    waits.sort()
    p99 = waits[max(0, math.ceil(0.99 * len(waits)) - 1)] if waits else None
    return {"interval_seconds": interval, "speedup": round(sl.window_ms / 1000 / interval, 1),
            "rows_per_second_landed": sl.rows / (interval * len(sl.windows)), "windows": len(waits),
            "median_seconds": statistics.median(waits) if waits else None, "p99_seconds": p99,
            "latencies": [round(w, 3) for w in waits]}


def bench(spark: Any, tier: Tier, names: list[str], minutes: float | None, files: int, land_every: float,
          work: Path, warmup: bool = True) -> dict[str, Any]:
    dataset = ensure(tier, 1.0)
    configs = policy_configs.write(tier, 1.0, work / "config")
    out: dict[str, Any] = {}
    for name in names:
        folder = work / name
        shutil.rmtree(folder, ignore_errors=True)
        span = minutes if minutes is not None else MINUTES[name]
        sl = cut(dataset.path, name, folder / "landing", span, files)
        only = _only(configs, name)
        print(f"[{tier.name}] {name}: {sl.rows} rows in {files} windows", file=sys.stderr, flush=True)
        if warmup:
            catch_up(spark, sl, only, folder / "warm-up" / "catch-up")
            batch_baseline(spark, sl, only, name, folder / "warm-up" / "batch")
        stream = catch_up(spark, sl, only, folder / "catch-up")
        batch = batch_baseline(spark, sl, only, name, folder / "batch")
        wait = latency(spark, sl, only, folder / "live", land_every)
        ratio = stream["rows_per_second"] / batch["rows_per_second"] if stream["rows_per_second"] else None
        out[name] = {"rows": sl.rows, "minutes": span, "window_ms": sl.window_ms, "stream": stream,
                     "batch": batch, "stream_to_batch": ratio, "latency": wait}
        print(f"  stream {stream['rows_per_second']:,.0f} rows/s, "
              f"batch {batch['rows_per_second']:,.0f} rows/s (x{ratio:.2f}); "
              f"latency median {wait['median_seconds']:.1f}s p99 {wait['p99_seconds']:.1f}s",
              file=sys.stderr, flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.stream", description=__doc__.split("\n\n")[0])
    parser.add_argument("--tier", default="S,M")
    parser.add_argument("--policies", default=",".join(STREAMED))
    parser.add_argument("--minutes", type=float,
                        help="event time per policy (default: storage, backlog 360; clients 10; topics 20)")
    parser.add_argument("--files", type=int, default=8, help="windows (micro-batches) per run (default 8)")
    parser.add_argument("--land-every", type=float, default=5.0,
                        help="seconds between windows landed in the latency run (default 5)")
    parser.add_argument("--quick", action="store_true", help="1 minute in 3 windows; results in work/")
    parser.add_argument("--no-warmup", action="store_true",
                        help="skip the untimed catch-up and batch run of each policy before it is measured")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.policies.split(",") if n.strip()]
    unknown = [n for n in names if n not in STREAMED]
    if unknown:
        parser.error(f"--policies: {', '.join(unknown)} do not stream (one of {', '.join(STREAMED)})")
    minutes, files = (1.0, 3) if args.quick else (args.minutes, args.files)
    from quotaplane.core.spark.session import build_session

    spark = build_session(app_name="quotaplane-bench-stream", extra_conf={"spark.driver.memory": "4g"})
    results_dir = WORK / "results" if args.quick else RESULTS
    results_dir.mkdir(parents=True, exist_ok=True)
    for tier_name in [t.strip() for t in args.tier.split(",") if t.strip()]:
        tier = TIERS[tier_name]
        started = datetime.now(UTC)
        policies = bench(spark, tier, names, minutes, files, args.land_every, WORK / tier.name,
                         warmup=not args.no_warmup)
        result = {"tier": tier.name, "date": started.date().isoformat(), "started_at": started.isoformat(),
                  "command": " ".join(["python -m benchmarks.stream",
                                       *(argv if argv is not None else sys.argv[1:])]),
                  "minutes": minutes, "files": files, "land_every": args.land_every,
                  "warmup": not args.no_warmup,
                  "machine": describe(spark),
                  "policies": policies}
        which = "" if names == list(STREAMED) else "-" + "-".join(names)
        path = results_dir / f"stream-{tier.name}{which}-{started.date().isoformat()}.json"
        path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
