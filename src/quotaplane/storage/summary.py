"""What one storage configuration's evaluation amounts to, as plain data: for `summary.json`, the
console and the report (computed from the decision tables by `quotaplane.storage.spark.summary`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from quotaplane.storage.config import StorageConfig

FALLBACK_EVENTS = 50  # the times a fallback was applied that a summary lists, the first ones
PERIODS = 50  # the throttled periods a summary lists per unit, the first ones


def iso(ms: int | None) -> str | None:
    """Epoch milliseconds as an ISO-8601 UTC timestamp."""
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")



@dataclass
class EvaluationSummary:
    """Everything the summary, the console and the report need from one configuration's evaluation."""

    label: str
    config: StorageConfig
    units: list[dict[str, Any]]
    fallbacks: dict[str, dict[str, int]]
    fallback_events: list[dict[str, Any]]
    breaches: list[dict[str, Any]]
    factor_series: list[dict[str, Any]]
    span: tuple[int, int] | None
    #: per unit its first `PERIODS` throttled periods (`throttled_periods`: start_ms, end_ms, rounds,
    #: lowest_factor, the cause: reason or broker_id and log_dir, and `of`, the unit's count)
    periods: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        worst = max(self.units, key=lambda u: u["time_throttled_seconds"], default=None)
        return {
            "config": self.config.path,
            "dialect": self.config.dialect,
            "source": self.config.evaluation,
            "decisions": sum(u["decisions"] for u in self.units),
            "from": iso(self.span[0]) if self.span else None,
            "to": iso(self.span[1]) if self.span else None,
            "time_throttled_seconds": worst["time_throttled_seconds"] if worst else 0.0,
            "time_blocked_seconds": max((u["time_blocked_seconds"] for u in self.units), default=0.0),
            "first_throttled": min((u["first_throttled"] for u in self.units if u["first_throttled"]),
                                   default=None),
            "first_blocked": min((u["first_blocked"] for u in self.units if u["first_blocked"]),
                                 default=None),
            "units": self.units,
            "fallbacks_by_reason": self.fallbacks,
            "breaches": self.breaches,
            "throttled_periods": [period_dict(p) for p in self.periods],
        }


def cause(period: dict[str, Any]) -> str:
    """What throttled a period: its fallback reason, or its throttling volume (`broker 2
    /var/lib/kafka/data-1`; the local source's aggregate has no log dir)."""
    if period["reason"] is not None:
        return f"fallback ({period['reason']})"
    where = f"broker {period['broker_id']}" + (f" {period['log_dir']}" if period["log_dir"] else "")
    return f"volume {where}"


def period_dict(period: dict[str, Any]) -> dict[str, Any]:
    """A throttled period as `summary.json` lists it."""
    return {"cluster": period["cluster"], "observing_broker_id": period["observing_broker_id"],
            "from": iso(period["start_ms"]), "to": iso(period["end_ms"]), "rounds": period["rounds"],
            "lowest_factor": period["lowest_factor"], "cause": cause(period),
            "fallback_reason": period["reason"], "throttling_broker_id": period["broker_id"],
            "throttling_log_dir": period["log_dir"]}
