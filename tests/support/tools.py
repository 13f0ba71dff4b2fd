"""The Prometheus binaries the tests run (Debian's `prometheus` package; `make test` installs it): a
test that needs one and does not find it fails, saying how to install it, rather than being skipped."""

from __future__ import annotations

import shutil

import pytest

INSTALL_HINT = ("Debian's prometheus package provides it: `make test` installs it where it runs as root "
                "with apt-get (scripts/install-promtool.sh), or `apt-get install prometheus`")


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"`{name}` is not on PATH: {INSTALL_HINT}", pytrace=False)
    return path


def promtool() -> str:
    return tool("promtool")


def prometheus() -> str:
    return tool("prometheus")
