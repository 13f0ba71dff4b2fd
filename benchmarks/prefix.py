"""The reference engine's side of a comparison: a JSON Lines prefix of the input, and its run.

A benchmark input is Parquet; the reference engines read JSON Lines. The prefix (copied untimed,
and kept next to the dataset) holds, for every input of the policy, the rows whose time is before
that of row `max_rows` of the main input (file order is time order), so it has whole rounds, ticks
and milliseconds. The engine runs in a fresh interpreter (`benchmarks.reference`); when the prefix
is not the whole input, the whole input's time is estimated as the prefix's time times
total rows / prefix rows (the engines do constant work per row and per group).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds

from benchmarks.datasets import Dataset
from benchmarks.policies import PolicySpec
from quotaplane.core.policy import find_input

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Prefix:
    """JSON Lines copies of the first rows of a policy's inputs."""

    folder: Path
    files: dict[str, Path]
    rows: int  # prefix rows over all inputs of the policy
    total_rows: int  # rows of the whole input
    cutoff: int | None  # rows at or after this time are left out (None: the whole input)

    @property
    def whole(self) -> bool:
        return self.cutoff is None


def _dataset(dataset: Dataset, kind: str) -> ds.Dataset:
    path = find_input(dataset.path, kind)
    if path is None:
        raise FileNotFoundError(f"{dataset.path}: no {kind} input")
    return ds.dataset(path, format="parquet")


def cutoff_time(data: ds.Dataset, time_col: str, max_rows: int) -> int | None:
    """The time of row `max_rows` (0-based, file order), or a later one so that the rows at the
    first time are always kept; None when no such row exists (the whole input)."""
    seen, first = 0, None
    for batch in data.to_batches(columns=[time_col]):
        times = batch.column(0).to_numpy(zero_copy_only=False)
        if first is None and len(times):
            first = int(times[0])
        tail = times[max(0, max_rows - seen):]
        later = tail[tail > first] if first is not None else tail[:0]
        if len(later):
            return int(later[0])
        seen += len(times)
    return None


def _json_lines(batches: Iterable[pa.RecordBatch]) -> Iterator[str]:
    for batch in batches:
        for row in batch.to_pylist():
            yield json.dumps(row) + "\n"


def prepare(dataset: Dataset, policy: PolicySpec, max_rows: int) -> Prefix:
    """Write (or reuse) the JSON Lines prefix of `policy`'s inputs in `dataset`."""
    folder = dataset.path / "reference" / f"{policy.name}-{max_rows}"
    meta_path = folder / "prefix.json"
    files = {k: folder / f"{k}.jsonl" for k in policy.kinds()}
    total = sum(dataset.rows(i.kind) for i in policy.inputs)
    if meta_path.is_file():
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        return Prefix(folder, files, meta["rows"], total, meta["cutoff"])
    folder.mkdir(parents=True, exist_ok=True)
    cutoff = cutoff_time(_dataset(dataset, policy.main.kind), policy.main.time_col, max_rows)
    rows = 0
    for spec in policy.inputs:
        keep = None if cutoff is None else ds.field(spec.time_col) < cutoff
        with files[spec.kind].open("w", encoding="utf-8") as out:
            for line in _json_lines(_dataset(dataset, spec.kind).to_batches(filter=keep)):
                out.write(line)
                rows += 1
    meta_path.write_text(json.dumps({"rows": rows, "cutoff": cutoff}) + "\n", encoding="utf-8")
    return Prefix(folder, files, rows, total, cutoff)


@dataclass
class ReferenceRun:
    """One reference run over a prefix, and the estimate for the whole input."""

    prefix_rows: int
    total_rows: int
    whole_input: bool
    cutoff_ms: int | None
    decisions: int
    load_seconds: float  # reading and checking the JSON Lines
    evaluate_seconds: float
    write_seconds: float  # one JSON line per decision
    seconds: float  # load + evaluate + write, over the prefix
    peak_rss_bytes: int  # the reference interpreter's own peak
    estimated_seconds: float  # over the whole input: `seconds` times total / prefix rows
    estimated_evaluate_seconds: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def run(policy: PolicySpec, config: Path, prefix: Prefix, out: Path) -> ReferenceRun:
    """Run the policy's reference engine over `prefix` in a child interpreter."""
    command = [sys.executable, "-m", "benchmarks.reference", "--policy", policy.name, "--config", str(config),
               "--out", str(out)]
    for kind, path in prefix.files.items():
        command += ["--input", f"{kind}={path}"]
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=REPO)
    if done.returncode != 0:
        raise RuntimeError(f"reference engine of {policy.name} failed: {done.stderr.strip()[-2000:]}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    seconds = report["load"] + report["evaluate"] + report["write"]
    factor = prefix.total_rows / prefix.rows if prefix.rows else 0.0
    return ReferenceRun(
        prefix_rows=prefix.rows, total_rows=prefix.total_rows, whole_input=prefix.whole,
        cutoff_ms=prefix.cutoff, decisions=report["decisions"], load_seconds=report["load"],
        evaluate_seconds=report["evaluate"], write_seconds=report["write"], seconds=seconds,
        peak_rss_bytes=report["peak_rss_bytes"], estimated_seconds=seconds * factor,
        estimated_evaluate_seconds=report["evaluate"] * factor)
