"""An output directory that holds exactly one finished run.

A run writes into a staging directory beside `--out` (`.<name>.staging-<pid>`) and, once every
table, metric, summary and report is written, the staging directory takes the place of `--out`
(the earlier run's directory is moved aside first and then removed). A run that fails removes its
staging directory; a run that is killed leaves `--out` as it was, and its staging directory is
removed by the next run into the same `--out`. So a finished run's `--out` holds exactly its own
outputs, never a table of an earlier run beside them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from quotaplane.core.errors import InputError


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _leftovers(out: Path) -> Iterator[Path]:
    """Staging and moved-aside directories of runs into `out` whose process is gone."""
    for path in out.parent.glob(f".{out.name}.*-*"):
        kind, _, pid = path.name[len(out.name) + 2:].rpartition("-")
        if kind in ("staging", "previous") and pid.isdigit() and not _alive(int(pid)):
            yield path


@contextmanager
def staged_output(out: Path) -> Iterator[Path]:
    """Yield the staging directory to write into; on success it becomes `out` (module docstring)."""
    if out.exists() and not out.is_dir():
        raise InputError(str(out), "--out", str(out), "is not a directory")
    out.parent.mkdir(parents=True, exist_ok=True)
    for leftover in _leftovers(out):
        shutil.rmtree(leftover, ignore_errors=True)
    staging = out.parent / f".{out.name}.staging-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    previous = out.parent / f".{out.name}.previous-{os.getpid()}"
    if out.exists():
        out.rename(previous)
    staging.rename(out)
    shutil.rmtree(previous, ignore_errors=True)
