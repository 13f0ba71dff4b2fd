"""Which optional extras a command needs, and the one-line error when one is not installed.

The base install (`pip install quotaplane`) runs the reference engines: every `<policy> evaluate`
verb, `config check`, `forecast`, `serve` and the producer. `quotaplane[spark]` adds Spark with its
Arrow and pandas sides (`run`, `stream`, `simulate`, and Parquet inputs anywhere); `quotaplane[report]`
adds matplotlib for the HTML report of `run`. A command is checked before it starts, so that `run`
does not fail at its report after the whole Spark run.
"""

from __future__ import annotations

import importlib.util

from quotaplane.core.errors import QuotaplaneError

#: a module an extra installs -> the extra
EXTRA_OF = {"pyspark": "spark", "py4j": "spark", "pyarrow": "spark", "pandas": "spark",
            "matplotlib": "report"}
#: the modules each command needs beyond the base install
NEEDS = {"run": ("pyspark", "pyarrow", "pandas", "matplotlib"), "stream": ("pyspark", "pyarrow", "pandas"),
         "simulate": ("pyarrow", "numpy")}


class MissingExtra(QuotaplaneError):
    """A command needs a module of an optional extra that is not installed."""

    def __init__(self, command: str, modules: list[str]) -> None:
        extras = sorted({EXTRA_OF.get(m, "spark") for m in modules})
        if command == "run":
            extras = ["spark", "report"]
        super().__init__(f"quotaplane {command} needs {', '.join(modules)}, not installed here: install the "
                         f"{' and '.join(extras)} extra{'s' if len(extras) > 1 else ''} "
                         f"(pip install 'quotaplane[{','.join(extras)}]')")


def check(command: str) -> None:
    """Raise `MissingExtra` when `command` needs a module that cannot be imported."""
    missing = [m for m in NEEDS.get(command, ()) if importlib.util.find_spec(m) is None]
    if missing:
        raise MissingExtra(command, missing)


def missing_extra(command: str, error: ModuleNotFoundError) -> MissingExtra | None:
    """The error to print for a module of an extra that a command imported and did not find (a
    Parquet input read without pyarrow), or None for any other missing module."""
    root = (error.name or "").split(".")[0]
    return MissingExtra(command, [root]) if root in EXTRA_OF else None
