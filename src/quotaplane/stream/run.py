"""`quotaplane stream`: the policies over a landing directory, continuously, on Structured Streaming.

One streaming query reads every input folder of the configured policies with the file source (a
row per new file: the file's text, read whole so that a line's place in its file is known) and
hands each micro-batch to `MicroBatches` through `foreachBatch`. Spark's checkpoint
(`<checkpoint>/spark`) records which files each micro-batch read; the stream's own commit log
(`<checkpoint>/quotaplane`) makes a micro-batch replayed after a crash write the same rows again,
so every decision row is written exactly once.

The driver watches: it prints a line per commit, serves the metrics, stops cleanly on SIGTERM or
SIGINT (pending rows stay in the state for the next run), and with `--until-idle S` stops once no
new file has arrived and no commit has been made for S seconds, then decides everything still
pending (the flush).
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from quotaplane.core.errors import InputError
from quotaplane.stream.commits import Commit, CommitLog
from quotaplane.stream.plan import Streamed
from quotaplane.stream.status import StreamStatus


@dataclass(frozen=True)
class StreamOptions:
    landing: Path
    out: Path
    checkpoint: Path
    trigger_seconds: float = 5.0
    until_idle_seconds: float | None = None
    watermark_delay_ms: int = 60_000
    max_files_per_trigger: int | None = None
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"
    master: str | None = None
    remote: str | None = None


def run_stream(options: StreamOptions, streamed: list[Streamed], display: TextIO | None = sys.stderr,
               spark: Any = None) -> CommitLog:
    """Run the stream until SIGTERM/SIGINT or, with `until_idle_seconds`, until the landing is idle."""
    landing = options.landing
    if not landing.is_dir():
        raise InputError(str(landing), "--landing", str(landing), "is not a directory")
    log = CommitLog(options.checkpoint)
    log.check_version()
    status = StreamStatus([s.policy.name for s in streamed])
    status.update(log.latest())
    server = (status.serve(options.metrics_host, options.metrics_port)
              if options.metrics_port is not None else None)
    if spark is None:
        from quotaplane.core.spark.session import build_session

        spark = build_session(master=options.master, remote=options.remote, app_name="quotaplane-stream")
    from quotaplane.stream.spark.answers import driver_step_below_rows
    from quotaplane.stream.spark.microbatch import MicroBatches
    from quotaplane.stream.spark.source import landing_rows

    batches = MicroBatches(streamed, options.out, log, options.watermark_delay_ms,
                           driver_step_below_rows(spark))
    inputs = [i.name for s in streamed for i in s.inputs]
    source = landing_rows(spark, landing, streamed, options.max_files_per_trigger)
    stop = threading.Event()
    restore = _on_signals(stop)
    query = (source.writeStream.foreachBatch(batches.process)
             .option("checkpointLocation", str(options.checkpoint / "spark"))
             .trigger(processingTime=f"{options.trigger_seconds} seconds")
             .queryName("quotaplane_stream")
             .start())
    try:
        idle = _watch(query, log, status, landing, inputs, options, stop, display)
        query.stop()
        if idle:
            batches.flush(spark)
            _show(status, log.latest(), display, final=True)
    finally:
        if query.isActive:
            query.stop()
        restore()
        if server is not None:
            server.close()
    return log


def _watch(query: Any, log: CommitLog, status: StreamStatus, landing: Path, inputs: list[str],
           options: StreamOptions, stop: threading.Event, display: TextIO | None) -> bool:
    """Follow the query until a signal (False) or the landing is idle (True); raise its failure."""
    shown = log.latest().number
    files = _landed(landing, inputs)
    active = time.monotonic()
    while not stop.wait(0.25):
        error = query.exception()
        if error is not None:
            raise RuntimeError(f"the streaming query failed: {error}")
        now = time.monotonic()
        count = _landed(landing, inputs)
        if count != files:
            files, active = count, now
        latest = log.latest()
        if latest.number != shown:
            shown, active = latest.number, now
            status.update(latest, query.lastProgress)
            _show(status, latest, display)
        limit = options.until_idle_seconds
        if limit is not None and now - active >= limit:
            progress = query.status
            if not progress.get("isTriggerActive") and not progress.get("isDataAvailable"):
                return True
    return False


def _landed(landing: Path, inputs: list[str]) -> int:
    """How many files the landing holds (names Spark reads: not starting with `.` or `_`)."""
    return sum(1 for name in inputs if (landing / name).is_dir()
               for f in (landing / name).iterdir() if not f.name.startswith((".", "_")))


def _show(status: StreamStatus, commit: Commit, display: TextIO | None, final: bool = False) -> None:
    if display is not None and commit.number:
        print(status.line(commit, final), file=display, flush=True)


def _on_signals(stop: threading.Event) -> Any:
    """Stop cleanly on SIGTERM and SIGINT (only from the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    for sig in previous:
        signal.signal(sig, lambda *_: stop.set())

    def restore() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    return restore
