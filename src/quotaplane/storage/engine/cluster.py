"""The cluster volume source of the spec dialect: one evaluation over every active broker's volumes."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from quotaplane.core.errors import InputError
from quotaplane.storage.config import StorageConfig
from quotaplane.storage.engine.decisions import MISSING_BROKER_DATA, Decision
from quotaplane.storage.engine.limits import assess
from quotaplane.storage.engine.volume import Volume


def unique_volumes(volumes: Iterable[Volume]) -> list[Volume]:
    """The volumes, refusing two observations of the same (broker, log dir) in one evaluation."""
    seen: dict[tuple[int, str], Volume] = {}
    for v in volumes:
        if v.key in seen:
            raise InputError(f"volume broker_id={v.broker_id} log_dir={v.log_dir!r}", "log_dir", v.log_dir,
                             "observed twice in one evaluation")
        seen[v.key] = v
    return list(seen.values())


def active_set(volumes: Sequence[Volume], active_brokers: Iterable[int] | None) -> frozenset[int]:
    """The given active brokers, or else the brokers the volumes belong to."""
    if active_brokers is not None:
        return frozenset(active_brokers)
    return frozenset(v.broker_id for v in volumes)


def evaluate_cluster(config: StorageConfig, volumes: Iterable[Volume],
                     active_brokers: Iterable[int] | None = None,
                     collection_error: str | None = None) -> Decision:
    """One round of the cluster source (spec: Cluster Volume Source, Fallback Throttle Factor).

    Only volumes of active brokers count. A failed collection applies the fallback factor with the
    error as the reason; otherwise an active broker with no volume applies it with reason
    `missing_broker_data`; otherwise the factor is the minimum of the volumes' factors and the volume
    giving it is the throttling volume (none when the factor is 1.0).
    """
    assert config.soft is not None and config.hard is not None, "the cluster source needs a hard limit"
    all_volumes = unique_volumes(volumes)
    active = active_set(all_volumes, active_brokers)
    considered = [v for v in all_volumes if v.broker_id in active]
    missing = tuple(sorted(active - {v.broker_id for v in considered}))
    assessments = tuple(sorted((assess(v, config.soft, config.hard) for v in considered),
                               key=lambda a: a.severity))
    base = Decision(source="cluster", throttle_factor=1.0, active_brokers=len(active),
                    active_log_dirs=len(considered), missing_brokers=missing,
                    collection_error=collection_error, assessments=assessments)
    if collection_error is not None:
        return replace(base, throttle_factor=config.fallback_factor, fallback_reason=collection_error,
                       fallback_applied=True)
    if missing:
        return replace(base, throttle_factor=config.fallback_factor, fallback_reason=MISSING_BROKER_DATA,
                       fallback_applied=True)
    if not assessments or assessments[0].factor == 1.0:
        return base
    worst = assessments[0]
    return replace(base, throttle_factor=worst.factor, throttling_broker_id=worst.volume.broker_id,
                   throttling_log_dir=worst.volume.log_dir)
