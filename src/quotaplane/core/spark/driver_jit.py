"""The driver JVM's just-in-time compilers, chosen by how many rows a run reads.

HotSpot compiles hot methods twice: quickly with C1, then again, optimised, with C2. A short run
of a new JVM never repays C2: on the bundled example (21,558 rows, interpreted expressions) C2's
thread took 23 of the run's 63 CPU seconds on a 2-core machine. A run that starts its own embedded
session and whose inputs hold fewer rows than `DEFAULT_INTERPRETED_BELOW_ROWS` (the line below
which the run's expressions are interpreted, `quotaplane.core.spark.expressions`) starts its driver
with C1 only (`-XX:TieredStopAtLevel=1`); larger runs keep both compilers, which their long jobs
repay (docs/performance.md, "Stages side by side"). The choice is made before Spark starts, so it
takes the default threshold, not a session's; `QUOTAPLANE_DRIVER_JIT=tiered` keeps both compilers
for every run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from quotaplane.core.spark.expressions import DEFAULT_INTERPRETED_BELOW_ROWS

ENV = "QUOTAPLANE_DRIVER_JIT"
C1_ONLY = "-XX:TieredStopAtLevel=1"


@dataclass(frozen=True)
class JitChoice:
    """The driver's compilers and why (for `summary.json`); `options` go to its Java options."""

    mode: str  # "C1 only", "tiered" or "not chosen"
    reason: str

    @property
    def options(self) -> str | None:
        return C1_ONLY if self.mode == "C1 only" else None

    def as_dict(self) -> dict[str, str]:
        return {"mode": self.mode, "reason": self.reason}


def jit_for(rows: int | None) -> JitChoice:
    """C1 only for fewer than `DEFAULT_INTERPRETED_BELOW_ROWS` rows (`rows` as
    `expressions.count_rows` counts them, None when they could not be counted), unless
    `QUOTAPLANE_DRIVER_JIT` says `tiered`."""
    limit = DEFAULT_INTERPRETED_BELOW_ROWS
    wanted = os.environ.get(ENV, "").strip().lower()
    if wanted == "tiered":
        return JitChoice("tiered", f"{ENV}=tiered")
    if rows is None:
        return JitChoice("tiered", "inputs not counted (not local files, or compressed)")
    if rows >= limit:
        return JitChoice("tiered", f"{limit:,} input rows or more")
    return JitChoice("C1 only", f"{rows:,} input rows, fewer than {limit:,}")


NOT_CHOSEN = JitChoice("not chosen", "the run did not start the Spark driver")
