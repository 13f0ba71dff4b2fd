"""Check that a real Spark cluster decides like the embedded local run, on the bundled example.

    python -m tests.support.cluster_check [standalone|connect] [--workers 2] [--keep DIR]

Runs `quotaplane run` on the bundled example twice, in subprocesses: once embedded (`local[*]`),
once on a cluster started on loopback from the installed pyspark (`standalone`: a master and
`--workers` workers; `connect`: a Spark Connect server), stops the cluster, and compares every
decision table the two runs wrote, row by row. Exit 0 when they are equal, 1 with the tables that
differ, 2 when a run fails. Run from the repository root (`make cluster-check` does).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from tests.support.cluster import start_connect_server, start_standalone


def decision_tables(out: Path) -> dict[str, pd.DataFrame]:
    """Every Parquet table a run wrote (not the quarantine), columns sorted, rows in a canonical order."""
    tables = {}
    for folder in sorted(p for p in out.iterdir() if p.is_dir() and p.name != "quarantine"):
        frame = pq.read_table(folder).to_pandas()
        frame = frame.reindex(sorted(frame.columns), axis=1)
        keys = [c for c in frame.columns
                if frame[c].map(lambda v: not isinstance(v, list | dict | np.ndarray)).all()]
        tables[folder.name] = frame.sort_values(keys).reset_index(drop=True)
    return tables


def differences(expected: dict[str, pd.DataFrame], got: dict[str, pd.DataFrame]) -> list[str]:
    """What differs between two runs' tables: one line per table (empty when they are equal)."""
    lines = [f"{name}: only in the {side} run"
             for side, names in (("local", set(expected) - set(got)), ("cluster", set(got) - set(expected)))
             for name in sorted(names)]
    for name in sorted(set(expected) & set(got)):
        try:
            pd.testing.assert_frame_equal(got[name], expected[name], check_dtype=False, obj=name)
        except AssertionError as exc:
            lines.append(f"{name}: {str(exc).splitlines()[0]}")
    return lines


def run_cli(out: Path, *flags: str) -> None:
    """`quotaplane run` on the bundled example into `out`, in a subprocess; raises on failure."""
    env = {**os.environ, "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}
    command = [sys.executable, "-m", "quotaplane.cli", "run", *flags, "--out", str(out), "--quiet"]
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1800)
    if proc.returncode != 0 or "report:" not in proc.stdout:
        raise RuntimeError(f"quotaplane run {' '.join(flags)} failed (exit {proc.returncode}):\n"
                           f"{proc.stderr[-4000:]}")


def check(kind: str, work: Path, workers: int = 2) -> int:
    """Both runs into `work`, then the comparison; the exit status of `main`."""
    try:
        print("embedded local run ...", flush=True)
        run_cli(work / "local-run")
        if kind == "standalone":
            cluster = start_standalone(workers=workers, cores=1, memory="1g", work_dir=work / "spark")
        else:
            cluster = start_connect_server(work_dir=work / "spark")
        with cluster:
            print(f"{kind} run on {cluster.url} ...", flush=True)
            run_cli(work / "cluster-run", "--master" if kind == "standalone" else "--remote", cluster.url)
        print("cluster stopped", flush=True)
    except (RuntimeError, TimeoutError) as exc:
        print(exc, file=sys.stderr)
        return 2
    expected, got = decision_tables(work / "local-run"), decision_tables(work / "cluster-run")
    diffs = differences(expected, got)
    for line in diffs:
        print(f"  differs: {line}")
    if not diffs:
        print(f"the {kind} cluster decided like the local run: {len(expected)} tables, "
              f"{sum(len(t) for t in expected.values()):,} rows equal")
    return 1 if diffs else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.cluster_check",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", nargs="?", choices=["standalone", "connect"], default="standalone")
    parser.add_argument("--workers", type=int, default=2, help="standalone workers (default 2)")
    parser.add_argument("--keep", type=Path, default=None, help="keep both runs' outputs under DIR")
    args = parser.parse_args(argv)
    work = args.keep or Path(tempfile.mkdtemp(prefix="quotaplane-cluster-check-"))
    try:
        return check(args.kind, work, args.workers)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"outputs: {work}")


if __name__ == "__main__":
    sys.exit(main())
