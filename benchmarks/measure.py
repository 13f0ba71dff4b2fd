"""Measuring one step: wall time and peak resident memory of the whole process tree.

Spark work happens in the JVM and in Python worker processes, not only in this interpreter, so the
peak is sampled over this process and all its descendants (read from /proc every 50 ms).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def tree_rss_bytes(root: int) -> int:
    """Resident memory of `root` and all its descendants, in bytes."""
    tree = _children()
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        with contextlib.suppress(OSError, IndexError, ValueError):
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE
        stack.extend(tree.get(pid, []))
    return total


class PeakRss:
    """Samples the process tree's resident memory in a thread; `.peak` is the maximum seen."""

    def __init__(self, interval: float = 0.05) -> None:
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        root = os.getpid()
        while not self._stop.is_set():
            self.peak = max(self.peak, tree_rss_bytes(root))
            self._stop.wait(self.interval)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, tree_rss_bytes(os.getpid()))


@dataclass
class Timing:
    seconds: float
    peak_rss_bytes: int


def measure(fn: Callable[[], T]) -> tuple[T, Timing]:
    """Run `fn` once: its wall time and the peak memory while it ran."""
    with PeakRss() as peak:
        start = time.perf_counter()
        result = fn()
        seconds = time.perf_counter() - start
    return result, Timing(seconds, peak.peak)
