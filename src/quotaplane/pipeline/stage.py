"""The contract between the main job (`quotaplane run`) and each policy's pipeline stage.

A stage is a function `run_stage(ctx: RunContext) -> StageResult | None`. It reads its own
telemetry from `ctx.telemetry_dir` (see `find_input`), evaluates its policy with Spark, writes its
tables under `ctx.out_dir`, registers its metrics in `ctx.registry` (written to `metrics.prom`),
and returns its summary, its read counts and its report sections. It returns None when its
telemetry or configuration is absent, so a run evaluates whatever the inputs allow.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from prometheus_client import CollectorRegistry
from pyspark.sql import DataFrame, SparkSession

from quotaplane.report.html import Section
from quotaplane.telemetry.readers import ReadCounts

# Where each kind of telemetry lives inside a telemetry directory: `<name>/` (a directory of
# files) or a single `<name>.jsonl|.json|.csv|.parquet` file.
INPUT_NAMES = {
    "volumes": "per-volume disk observations (storage quotas)",
    "membership": "active brokers per collection round (storage quotas)",
    "collection_errors": "failed collection rounds (storage quotas)",
    "client_requests": "per-request client quota usage (Kafka client quotas)",
    "topic_requests": "produce requests per topic (topic bytes-in quotas)",
    "backlog_snapshots": "backlog per topic and subscription (Pulsar backlog quotas)",
}


def find_input(telemetry_dir: Path, name: str) -> str | None:
    """The path of input `name` under `telemetry_dir`, or None when it is absent."""
    if name not in INPUT_NAMES:
        raise KeyError(name)
    folder = telemetry_dir / name
    if folder.is_dir() and any(p.is_file() for p in folder.rglob("*")):
        return str(folder)
    for suffix in (".jsonl", ".json", ".csv", ".parquet"):
        file = telemetry_dir / f"{name}{suffix}"
        if file.exists():
            return str(file)
    return None


class Progress:
    """A short progress display of the pipeline's stages on stderr (or nothing when quiet)."""

    def __init__(self, stream: TextIO | None = sys.stderr) -> None:
        self.stream = stream
        self.timings: dict[str, float] = {}

    @contextmanager
    def step(self, label: str) -> Iterator[None]:
        start = time.perf_counter()
        if self.stream:
            print(f"  … {label}", file=self.stream, flush=True)
        try:
            yield
        finally:
            elapsed = time.perf_counter() - start
            self.timings[label] = elapsed
            if self.stream:
                print(f"  ✓ {label} ({elapsed:.1f}s)", file=self.stream, flush=True)


@dataclass
class RunConfigs:
    """The configuration files of a run; a stage without its file does not run."""

    storage: Path | None = None
    storage_compare: Path | None = None
    client_quotas: Path | None = None
    topics: Path | None = None
    backlog_policies: Path | None = None


@dataclass
class RunContext:
    """What a stage gets: Spark, where to read and write, configs, metrics, progress, and the
    outputs of earlier stages (`shared`, e.g. `shared["storage_decisions"]`)."""

    spark: SparkSession
    telemetry_dir: Path
    out_dir: Path
    configs: RunConfigs
    registry: CollectorRegistry
    progress: Progress
    shared: dict[str, DataFrame] = field(default_factory=dict)


@dataclass
class StageResult:
    """What a stage returns: `summary` goes to `summary.json` under `name`."""

    name: str
    summary: dict[str, Any]
    read_counts: list[ReadCounts] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    console: list[str] = field(default_factory=list)  # a few lines for the final summary print
