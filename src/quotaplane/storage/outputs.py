"""What the storage stage gives other policies: the throttle factor over time, and the time of the
last used volume row.

The client quota stage needs the factor (produce limits follow it, `Policy.needs`): the
`storage_decisions` table as the storage stage wrote it. The forecast needs the last volume time
(its "as of"), which the storage stage takes in its counting scan of the volumes and gives at once,
before it decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@dataclass(frozen=True)
class StorageDecisions:
    """The storage decisions of a run (`storage_decisions`: `ts_ms`, `throttle_factor`,
    `observing_broker_id`, ...)."""

    decisions: DataFrame


@dataclass(frozen=True)
class LastVolumeTime:
    """The time of the run's last used volume row (epoch ms; None: there is none)."""

    ts_ms: int | None
