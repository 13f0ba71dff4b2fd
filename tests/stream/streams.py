"""The telemetry the stream tests share: a small simulated fleet landed in event-time windows."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from quotaplane.core.policy import RunConfigs
from quotaplane.run_command import bundled_example
from quotaplane.sim.run import simulate
from quotaplane.stream.spark.answers import DRIVER_STEP
from tests.support.landing import split_telemetry

#: where a micro-batch's keys are stepped: in the driver (these cases' batches are small, below
#: `spark.quotaplane.stream.driverStepBelowRows`) or by Spark's tasks (the line set to 0)
STEPS = ("driver-step", "spark-step")
TABLES = ("storage_decisions", "client_request_decisions", "topic_decisions", "backlog_checks",
          "backlog_evictions")
WINDOW_MS = 40_000
SPAN_MS = 120_000


@dataclass(frozen=True)
class StreamCase:
    root: Path
    landing: Path
    configs: RunConfigs
    windows: int
    rows: int
    #: rows arrive at most one window out of order: the watermark's delay covers two
    delay_ms: int = 2 * WINDOW_MS


def stream_case(root: Path) -> StreamCase:
    """Two minutes of a three-broker fleet (every input of the four policies), in 40 s windows;
    the bundled example's configurations (storage: the cluster source)."""
    telemetry = root / "telemetry"
    manifest = simulate("replication-fill", telemetry, {
        "brokers": 3, "log_dirs": 2, "days": 0.01, "interval_seconds": 30, "clients": 3, "topics": 2,
        "pulsar_topics": 2, "backlog_check_seconds": 30, "seed": 7,
    }, kinds=["volumes", "membership", "collection_errors", "client_requests", "topic_requests",
              "backlog_snapshots"])
    landing = root / "landing"
    start = int(manifest["start_ms"])
    windows = split_telemetry(telemetry, landing, WINDOW_MS, since_ms=start, until_ms=start + SPAN_MS)
    rows = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in landing.rglob("*.jsonl"))
    _, example = bundled_example()
    backlog = root / "backlog-policies.json"  # limits low enough for evictions in three minutes
    backlog.write_text(json.dumps({"broker": {
        "backlogQuotaDefaultLimitBytes": 20_000_000, "backlogQuotaDefaultLimitSecond": 120,
        "backlogQuotaDefaultRetentionPolicy": "consumer_backlog_eviction",
        "backlogQuotaCheckIntervalInSeconds": 30}}), encoding="utf-8")
    configs = RunConfigs(storage=example.storage, client_quotas=example.client_quotas,
                         topics=example.topics, backlog_policies=backlog)
    return StreamCase(root, landing, configs, windows, rows)


def batch_tables(spark: Any, out: Path) -> dict[str, list[dict[str, Any]]]:
    return {t: [r.asDict() for r in spark.read.parquet(str(out / t)).collect()]
            for t in TABLES if (out / t).exists()}


def stream_tables(spark: Any, out: Path) -> dict[str, list[dict[str, Any]]]:
    """The stream's tables without the `batch` partition column."""
    return {t: [r.asDict() for r in spark.read.parquet(str(out / t)).drop("batch").collect()]
            for t in TABLES if (out / t).exists()}


def stream_command(case: StreamCase, out: Path, *extra: str, file_per_batch: bool = True) -> list[str]:
    """`quotaplane stream` over the case's landing in a subprocess: one window per micro-batch, or
    (`file_per_batch` False) every file in the first."""
    c = case.configs
    one = ["--max-files-per-trigger", "1"] if file_per_batch else []
    return [sys.executable, "-m", "quotaplane.cli", "stream", "--landing", str(case.landing),
            "--out", str(out), "--config", str(c.storage), "--client-quotas", str(c.client_quotas),
            "--topic-config", str(c.topics), "--backlog-policies", str(c.backlog_policies),
            "--trigger", "0.5", "--watermark-delay", str(case.delay_ms / 1000), *one, *extra]


def step_conf(step: str) -> dict[str, str]:
    """The Spark configuration that steps the keys as `step` says (one of `STEPS`)."""
    return {DRIVER_STEP: "0"} if step == "spark-step" else {}


def step_env(step: str) -> dict[str, str]:
    """The environment of a `quotaplane stream` subprocess whose keys are stepped as `step` says."""
    conf = " ".join(f"--conf {k}={v}" for k, v in step_conf(step).items())
    return {**os.environ, "PYSPARK_SUBMIT_ARGS": f"{conf} pyspark-shell"} if conf else dict(os.environ)
