"""How the test processes (brokers, Prometheus) are launched."""

from __future__ import annotations

import shutil


def orphan_guard() -> list[str]:
    """The command prefix `setpriv --pdeathsig KILL`, where setpriv exists: a test process that dies
    without its teardown takes the processes it started with it rather than leaving them running.
    The signal follows the thread that started the process, so start them from the main thread."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL"] if setpriv else []
