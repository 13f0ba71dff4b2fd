"""Exactly once across failure: the stream's driver is killed (SIGKILL, with its JVM) in the middle of
the stream, started again on the same checkpoint, and every decision row is there once."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.stream.streams import STEPS, StreamCase, step_env, stream_command, stream_tables
from tests.support.differential import assert_rows_equal

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _commits(out: Path) -> int:
    folder = out / "_checkpoint" / "quotaplane" / "commits"
    return len(list(folder.glob("*.json"))) if folder.is_dir() else 0


@pytest.mark.parametrize("step", STEPS)
def test_a_killed_stream_restarts_and_loses_or_doubles_nothing(spark, case: StreamCase, batch, step: str,
                                                                tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = subprocess.Popen(stream_command(case, out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             start_new_session=True, env=step_env(step))
    try:
        deadline = time.monotonic() + 240
        while _commits(out) < 1 and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.1)
        assert first.poll() is None, first.stderr.read().decode() if first.stderr else ""
        assert _commits(out) >= 1, "no micro-batch committed in time"
        time.sleep(0.3)  # into the next micro-batch
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    killed_at = _commits(out)
    assert killed_at < case.windows, "the stream had finished before the kill: nothing was tested"
    second = subprocess.run(stream_command(case, out, "--until-idle", "2"), capture_output=True, text=True,
                            timeout=600, env=step_env(step))
    assert second.returncode == 0, second.stderr
    tables = stream_tables(spark, out)
    for table, expected in batch.items():
        assert_rows_equal(expected, tables.get(table, []),
                          label=f"{table} after a kill at commit {killed_at}")
