"""What the backlog stage gives other stages: every topic's check at every tick.

The forecast stage reads it (time until each topic's quota); it is the `backlog_checks` table as
the backlog stage wrote it (`ts_ms`, `topic`, `namespace`, `backlog_size_bytes`,
`backlog_age_seconds`, `size_limit`, `time_limit`, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@dataclass(frozen=True)
class BacklogChecks:
    checks: DataFrame
