"""The Policy interface: what every quota policy gives the runner, the CLI and the live modes.

A policy (storage, clients, topics, backlog) is one package holding its config, its record schemas,
its pure reference engine, its Spark transforms, its metrics, its report section and its CLI verbs;
its `Policy` object is the one face the rest of quotaplane sees:

- `inputs`: the telemetry inputs it reads (the first is required for it to run, unless the policy
  says otherwise with `runnable`);
- `load_config(configs)`: its configuration from the run's files, or None when not configured;
- `evaluator`: its reference evaluation for `quotaplane <name> evaluate` (one generic command flow,
  `quotaplane.core.commands`);
- `run_stage(ctx, config, outputs)`: its Spark stage of `quotaplane run`: tables written under
  `ctx.out_dir`, metrics registered in `ctx.registry`, and a `StageResult` (summary, read counts,
  report sections, console lines);
- `incremental`: its incremental form, key by key, for `quotaplane stream`
  (`quotaplane.core.incremental`);
- `live`: how it decides in `quotaplane serve` (`quotaplane.core.live`: the inputs it reads live
  and its decider);
- `needs` / `provides`: what it takes from, or gives to, other policies, as types: the client quota
  stage needs `StorageDecisions` (the storage throttle factor over time), which the storage stage
  provides. The runner orders the stages by these and hands them over in `Outputs`; a stage
  provides what it gives as soon as it has it, and asks for what it needs when it needs it.

Nothing here imports pyspark at module level: the reference engines and the CLI import this module
without Spark.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TextIO, TypeVar

from quotaplane.core.errors import ConfigError
from quotaplane.core.incremental import Incremental
from quotaplane.core.live import LivePart
from quotaplane.core.records import RecordSchema

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from pyspark.sql import SparkSession

    from quotaplane.core.report import Section
    from quotaplane.core.spark.readers import ReadCounts

C = TypeVar("C")
T = TypeVar("T")

# How a single-file input may be written instead of a folder: `<name>.jsonl|.json|.csv|.parquet`.
INPUT_SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")


@dataclass(frozen=True)
class Input:
    """A telemetry input a policy reads: `<telemetry dir>/<name>/` or `<name>.<suffix>`."""

    name: str
    schema: RecordSchema
    description: str
    required: bool = True


def find_input(telemetry_dir: Path, name: str) -> str | None:
    """The path of input `name` under `telemetry_dir` (a folder holding files, or a single file),
    or None when it is absent."""
    folder = telemetry_dir / name
    if folder.is_dir() and any(p.is_file() for p in folder.rglob("*")):
        return str(folder)
    for suffix in INPUT_SUFFIXES:
        file = telemetry_dir / f"{name}{suffix}"
        if file.exists():
            return str(file)
    return None


@dataclass
class RunConfigs:
    """The configuration files of a run; a policy whose file is absent does not run.

    `storage` is also the broker's properties for the client quotas (quota windows, the static
    produce quota, `client.quota.value.metric.enable`)."""

    storage: Path | None = None
    storage_compare: Path | None = None
    client_quotas: Path | None = None
    topics: Path | None = None
    backlog_policies: Path | None = None
    notices: Path | None = None
    #: the forecast's fit window and horizon (`6h`, `7d`; None: the defaults)
    forecast_window: str | None = None
    forecast_horizon: str | None = None


class Progress:
    """A short progress display of the run's steps on a stream (or nothing when quiet), and the
    time each step took (`timings`, in `summary.json`)."""

    def __init__(self, stream: TextIO | None = sys.stderr) -> None:
        self.stream = stream
        self.timings: dict[str, float] = {}
        self._lock = threading.Lock()  # stages side by side report their steps from their threads

    @contextmanager
    def step(self, label: str) -> Iterator[None]:
        start = time.perf_counter()
        self._say(f"  … {label}")
        mark = "✗"  # unless the step finishes
        try:
            yield
            mark = "✓"
        finally:
            elapsed = time.perf_counter() - start
            self.timings[label] = elapsed
            self._say(f"  {mark} {label} ({elapsed:.1f}s)")

    def _say(self, line: str) -> None:
        """One whole line: lines of steps running side by side do not run into each other."""
        if self.stream:
            with self._lock:
                self.stream.write(line + "\n")
                self.stream.flush()


@dataclass
class StageContext:
    """What a stage gets: Spark, where to read and write, the metrics registry and the progress.

    A stage writes under `out_dir`; when the run is published its outputs are under
    `published_dir` (the run's `--out`: `out_dir` is a staging directory that takes its place once
    the run has finished, see `quotaplane.core.staging`), which is where summaries should point.
    With `detail`, a stage also writes its large diagnostic tables (`quotaplane run --detail`), whose
    rows are as many as its input's; without it only the decisions and small aggregates. With
    `reads_in_driver` (a small run), a stage reads its clean JSON Lines inputs in the driver
    (`quotaplane.core.spark.driver_reads`)."""

    spark: SparkSession
    telemetry_dir: Path
    out_dir: Path
    registry: CollectorRegistry
    progress: Progress
    published_dir: Path | None = None
    detail: bool = False
    reads_in_driver: bool = False

    @property
    def published(self) -> Path:
        return self.published_dir if self.published_dir is not None else self.out_dir

    def find_input(self, name: str) -> str | None:
        return find_input(self.telemetry_dir, name)


@dataclass
class StageResult:
    """What a stage returns: `summary` goes to `summary.json` under `name`; `console` is a few lines
    for the final summary print."""

    name: str
    summary: dict[str, Any]
    read_counts: list[ReadCounts] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    console: list[str] = field(default_factory=list)


class Outputs:
    """What stages give each other, by type (see `Policy.needs` and `Policy.provides`).

    A stage provides what it gives as soon as it has it (the storage stage its decisions before its
    summary and report). Side by side, every stage starts at once, and `get` waits for a kind while
    a stage that provides it (`expect`) is still running."""

    def __init__(self) -> None:
        self._by_type: dict[type, object] = {}
        self._providers: dict[type, list[Future[Any]]] = {}
        self._changed = threading.Condition()

    def expect(self, provider: Future[Any], kinds: Iterable[type]) -> None:
        """`provider` (a stage that has started) provides `kinds`: `get` waits for them while it
        runs."""
        with self._changed:
            for kind in kinds:
                self._providers.setdefault(kind, []).append(provider)
        provider.add_done_callback(lambda _: self._wake())

    def provide(self, value: object) -> None:
        with self._changed:
            self._by_type[type(value)] = value
            self._changed.notify_all()

    def get(self, kind: type[T]) -> T | None:
        """What a stage provided of `kind`, once it has, or None once every stage that provides it
        has finished without it (the failure of one is raised instead)."""
        with self._changed:
            providers = list(self._providers.get(kind, ()))
            self._changed.wait_for(lambda: kind in self._by_type or all(p.done() for p in providers))
            value = self._by_type.get(kind)
        if value is None:
            for provider in providers:
                provider.result()
        return value if isinstance(value, kind) else None

    def _wake(self) -> None:
        with self._changed:
            self._changed.notify_all()


class ReferenceEvaluation(ABC):
    """The outcome of one reference evaluation, as `quotaplane <policy> evaluate` prints it."""

    #: one JSON document (indented) instead of one JSON line per row
    document: ClassVar[bool] = False
    #: why the input or the config is suspect but usable (printed as `warning: ...` on stderr)
    warnings: Sequence[str] = ()

    @abstractmethod
    def rows(self) -> Iterable[dict[str, Any]]:
        """The printed rows (or the one document), in order."""

    def register_metrics(self, registry: CollectorRegistry) -> None:
        """The policy's metrics after this evaluation (for `--metrics FILE`)."""
        raise NotImplementedError

    def write_extras(self, args: argparse.Namespace) -> None:  # noqa: B027 (optional hook)
        """Other outputs the policy's own options asked for (e.g. the backlog topic stats)."""


class Evaluator(ABC):
    """The reference evaluation of a policy on the command line: its options, and running it."""

    #: the `evaluate` verb's help and description
    help: ClassVar[str]
    description: ClassVar[str]
    #: whether `--metrics FILE` is offered
    metrics: ClassVar[bool] = True

    @abstractmethod
    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """The verb's own options (config and input files first)."""

    @abstractmethod
    def evaluate(self, args: argparse.Namespace) -> ReferenceEvaluation:
        """Load the config, read the records, run the reference engine; `ConfigError`,
        `ConfigErrors` or `InputError` on bad input."""


class Policy(ABC, Generic[C]):
    """One quota policy, as the runner, the CLI and the live modes see it (module docstring)."""

    name: ClassVar[str]
    #: `quotaplane <name> --help`
    title: ClassVar[str]
    inputs: ClassVar[tuple[Input, ...]]
    needs: ClassVar[tuple[type, ...]] = ()
    provides: ClassVar[tuple[type, ...]] = ()
    evaluator: ClassVar[Evaluator | None] = None
    #: its incremental form for `quotaplane stream` (None: the policy does not stream)
    incremental: ClassVar[Incremental[Any] | None] = None
    #: how it takes part in `quotaplane serve` (None: it does not decide live)
    live: ClassVar[LivePart | None] = None

    @abstractmethod
    def load_config(self, configs: RunConfigs) -> C | None:
        """The policy's configuration from the run's files; None when it is not configured.
        Raises `ConfigError`/`ConfigErrors` on a bad file (checked before Spark starts)."""

    @abstractmethod
    def run_stage(self, ctx: StageContext, config: C, outputs: Outputs) -> StageResult:
        """The Spark stage of `quotaplane run` (only called when the required input is present)."""

    def runnable(self, telemetry_dir: Path, config: C) -> bool:
        """Whether the stage can run on this telemetry with this (loaded) configuration: by default,
        when its first input is present."""
        return find_input(telemetry_dir, self.inputs[0].name) is not None

    def register_commands(self, sub: argparse._SubParsersAction) -> None:
        """Verbs of `quotaplane <name>` besides `evaluate` (e.g. `clients resolve`)."""


def order(policies: Sequence[Policy[Any]]) -> list[Policy[Any]]:
    """The policies with every provider before the policies that need what it provides (stable:
    otherwise in the given order)."""
    done: list[Policy[Any]] = []
    pending = list(policies)
    while pending:
        provided = {kind for p in done for kind in p.provides}
        offered = {kind for p in pending for kind in p.provides}
        ready = [p for p in pending if all(k in provided or k not in offered for k in p.needs)]
        if not ready:
            raise ConfigError("policies", ", ".join(p.name for p in pending), "need each other")
        done.append(ready[0])
        pending.remove(ready[0])
    return done
