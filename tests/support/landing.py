"""A landing directory that fills over time: telemetry cut into event-time windows, one JSON Lines
file per input and window, the rows of a window shuffled (out of order within it), and the files'
modification times in window order, so that a stream reading one file per input and micro-batch
sees the windows arrive one after another."""

from __future__ import annotations

import json
import os
import random
from collections import defaultdict
from pathlib import Path

from quotaplane.registry import POLICIES

#: each input's event-time field, as the streamed policies declare it
TIME_FIELDS = {name: field for p in POLICIES if p.incremental is not None
               for name, field in p.incremental.time_fields.items()}


def _time(value: object) -> int:
    return int(value)  # the simulator writes epoch milliseconds


def split_telemetry(telemetry: Path, landing: Path, window_ms: int, since_ms: int | None = None,
                    until_ms: int | None = None, seed: int = 1,
                    inputs: tuple[str, ...] = tuple(TIME_FIELDS)) -> int:
    """Write each input of `telemetry` (JSON Lines) to `landing/<input>/w<k>.jsonl`, window k =
    the rows with `start + k*window_ms <= t < start + (k+1)*window_ms` (start: the earliest event
    time of any input); rows before `since_ms` or at or after `until_ms` are left out. Returns the
    number of windows."""
    rows: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for name in inputs:
        for path in sorted((telemetry / name).glob("*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    t = _time(json.loads(line)[TIME_FIELDS[name]])
                    if (since_ms is None or t >= since_ms) and (until_ms is None or t < until_ms):
                        rows[name].append((t, line))
    start = min(t for lines in rows.values() for t, _ in lines)
    rng = random.Random(seed)
    windows = 0
    base = 1_700_000_000
    for name, lines in rows.items():
        by_window: dict[int, list[str]] = defaultdict(list)
        for t, line in lines:
            by_window[(t - start) // window_ms].append(line)
        folder = landing / name
        folder.mkdir(parents=True, exist_ok=True)
        for k, window in sorted(by_window.items()):
            rng.shuffle(window)
            path = folder / f"w{k:04d}.jsonl"
            path.write_text("".join(line + "\n" for line in window), encoding="utf-8")
            os.utime(path, (base + 10 * k, base + 10 * k))
            windows = max(windows, k + 1)
    return windows
