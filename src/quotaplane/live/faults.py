"""The failures of the service's sinks (the landing directory, the state file, enforcement, the
notice channel): each logged once when it starts, with where and why, and once when it ends; counted
by sink for `/metrics`. The service goes on deciding and retries the sink at the next round."""

from __future__ import annotations

import sys
from collections import Counter
from typing import TextIO


class Faults:
    def __init__(self, log: TextIO | None = None) -> None:
        self.log = log
        self.failing: dict[str, str] = {}
        self.counts: Counter[str] = Counter()

    def _say(self, text: str) -> None:
        print(f"quotaplane serve: {text}", file=self.log if self.log is not None else sys.stderr, flush=True)

    def failed(self, sink: str, why: str) -> None:
        """`sink` failed this round; logged when it starts failing or fails for another reason."""
        self.counts[sink] += 1
        if self.failing.get(sink) != why:
            self._say(f"{sink} failed: {why} (retried every round)")
            self.failing[sink] = why

    def ok(self, sink: str) -> None:
        if self.failing.pop(sink, None) is not None:
            self._say(f"{sink} works again")


def describe(exc: BaseException, where: object | None = None) -> str:
    """One line for an exception: the path and the OS's reason for an `OSError`."""
    if isinstance(exc, OSError) and exc.strerror:
        path = exc.filename if exc.filename is not None else where
        return f"{path}: {exc.strerror}" if path is not None else exc.strerror
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
