"""What the backlog stage gives other stages: every topic's check at every tick.

The forecast stage reads it (time until each topic's quota); it is the `backlog_checks` table as
the backlog stage wrote it (`ts_ms`, `topic`, `namespace`, `backlog_size_bytes`,
`backlog_age_seconds`, `size_limit`, `time_limit`, ...), and the time of its last tick (None when
no topic was checked), which the stage knows from its totals: no reader pays a scan to find it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@dataclass(frozen=True)
class BacklogChecks:
    checks: DataFrame
    last_ts_ms: int | None
