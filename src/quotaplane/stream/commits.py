"""The stream's own commit log, kept in the checkpoint directory beside Spark's.

Spark's checkpoint makes the file source replay a micro-batch that did not commit with the same
files; this log makes replaying it harmless. Every micro-batch (and the final flush of
`--until-idle`) is a *commit* numbered 1, 2, ...; commit `n` reads the state of commit `n - 1` and
writes, in this order: its output partitions (`<table>/batch=n`, each written under a hidden name
and renamed into place), the policies' key state (`state/<policy>/v=n`), and last its record
`commits/n.json` (written to a temporary name and renamed). A commit whose record exists is done.

A micro-batch Spark runs again after a crash gets the same commit number (the record says which
Spark batch each commit was) and overwrites the same partitions with the same rows: nothing is
lost, nothing doubled. State older than the previous commit is deleted: it can no longer be read.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from quotaplane import __version__
from quotaplane.core.errors import ConfigError

#: commit records kept (a replay continues from the commit before the last one Spark finished)
KEEP = 100


@dataclass
class Commit:
    """What one commit leaves for the next: the watermark, the latest event time seen, the Spark
    batch it was (None for the final flush), and running totals for the progress display."""

    number: int
    spark_batch: int | None
    watermark_ms: int | None
    max_event_ms: int | None
    flushed: bool = False
    version: str = __version__
    totals: dict[str, int] = field(default_factory=dict)
    #: the storage decisions in force at the end of this commit (for the client quotas)
    in_force: list[dict[str, Any]] = field(default_factory=list)
    #: this commit alone: rows read, rows written per table, keys in each policy's state, seconds
    rows: int = 0
    decided: dict[str, int] = field(default_factory=dict)
    keys: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    #: when the commit was recorded (Unix seconds)
    finished_unix: float = 0.0

    @staticmethod
    def first() -> Commit:
        return Commit(0, None, None, None)


class CommitLog:
    def __init__(self, checkpoint: Path) -> None:
        self.root = checkpoint / "quotaplane"
        self.commits = self.root / "commits"

    def records(self) -> list[Commit]:
        if not self.commits.is_dir():
            return []
        out = []
        for path in self.commits.glob("*.json"):
            data = json.loads(path.read_text(encoding="utf-8"))
            out.append(Commit(**data))
        return sorted(out, key=lambda c: c.number)

    def check_version(self) -> None:
        """The key state pickles the engines' objects: a checkpoint is read by the version that wrote it."""
        records = self.records()
        if records and records[-1].version != __version__:
            raise ConfigError("--checkpoint", str(self.root.parent),
                              f"was written by quotaplane {records[-1].version}; this is {__version__}: "
                              "start from a new checkpoint")

    def before(self, spark_batch: int) -> Commit:
        """The commit a run of Spark batch `spark_batch` continues from: the latest one that was not
        this batch or a later one (a flush counts as after the batch it followed)."""
        previous = Commit.first()
        for record in self.records():
            if record.spark_batch is not None and record.spark_batch >= spark_batch:
                break
            previous = record
        return previous

    def latest(self) -> Commit:
        records = self.records()
        return records[-1] if records else Commit.first()

    def record(self, commit: Commit) -> None:
        commit.finished_unix = round(time.time(), 3)
        self.commits.mkdir(parents=True, exist_ok=True)
        tmp = self.commits / f".{commit.number}.json.tmp"
        tmp.write_text(json.dumps(asdict(commit), sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, self.commits / f"{commit.number}.json")
        # a replayed batch supersedes any record after it (there is none unless the log was cut short);
        # records older than the last KEEP are not needed (each carries the running totals): the log
        # read on every micro-batch and by the progress display stays small in a long-running stream
        for other in self.commits.glob("*.json"):
            if int(other.stem) > commit.number or int(other.stem) <= commit.number - KEEP:
                other.unlink()

    def state_dir(self, policy: str, number: int) -> Path:
        return self.root / "state" / policy / f"v={number}"

    def prune_state(self, policy: str, keep_from: int) -> None:
        """Delete key state versions older than `keep_from`."""
        folder = self.root / "state" / policy
        if not folder.is_dir():
            return
        for version in folder.glob("v=*"):
            if int(version.name[2:]) < keep_from:
                shutil.rmtree(version, ignore_errors=True)


def staging_dir(target: Path) -> Path:
    """Where a partition is written before `publish` renames it into place (hidden from readers:
    Spark skips names that start with `_`)."""
    return target.parent / f"_writing-{target.name}"


def publish(staged: Path, target: Path) -> None:
    """Rename `staged` to `target`, replacing what a previous attempt of the same commit wrote."""
    if not staged.exists():
        return
    if target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(staged, target)
