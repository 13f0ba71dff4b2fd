"""What the storage stage gives other policies: the throttle factor over time.

The client quota stage needs it (produce limits follow the factor, `Policy.needs`); it is the
`storage_decisions` table as the storage stage wrote it. The forecast takes the time of the last
used volume row from it (the storage stage reads it in its counting scan of the volumes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@dataclass(frozen=True)
class StorageDecisions:
    """The storage decisions of a run (`storage_decisions`: `ts_ms`, `throttle_factor`,
    `observing_broker_id`, ...), of the comparison configuration when one was given, and the time of
    the last used volume row (None: there is none)."""

    decisions: DataFrame
    compare: DataFrame | None = None
    last_volume_ts_ms: int | None = None
