"""The deprecated local volume source: the legacy aggregate rule, per broker, on its own volumes only."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from quotaplane.storage.config import StorageConfig
from quotaplane.storage.engine.cluster import active_set, unique_volumes
from quotaplane.storage.engine.decisions import MISSING_BROKER_DATA, Decision
from quotaplane.storage.engine.limits import legacy_factor
from quotaplane.storage.engine.volume import Volume


def evaluate_local(config: StorageConfig, volumes: Iterable[Volume], broker_id: int,
                   active_brokers: Iterable[int] | None = None,
                   collection_error: str | None = None) -> Decision:
    """What broker `broker_id` decides from its own volumes (spec: Volume Source `local`, Compatibility).

    The aggregate used bytes of the broker's log dirs go through `legacy_factor` with
    `storage.soft`/`storage.hard`. Volumes of other brokers are invisible to it, which is why this
    source misses a disk that replication fills on another broker. A failed collection, or no
    volume of this broker, applies the fallback factor with the reason.
    """
    all_volumes = unique_volumes(volumes)
    own = [v for v in all_volumes if v.broker_id == broker_id]
    active = active_set(all_volumes, active_brokers)
    base = Decision(source="local", throttle_factor=1.0, active_brokers=len(active),
                    active_log_dirs=len(own), missing_brokers=() if own else (broker_id,),
                    observing_broker_id=broker_id, collection_error=collection_error)
    if collection_error is not None:
        return replace(base, throttle_factor=config.fallback_factor, fallback_reason=collection_error,
                       fallback_applied=True)
    if not own:
        return replace(base, throttle_factor=config.fallback_factor, fallback_reason=MISSING_BROKER_DATA,
                       fallback_applied=True)
    used = sum(v.used_bytes for v in own)
    factor = legacy_factor(used, config.legacy_soft_bytes, config.legacy_hard_bytes)
    return replace(base, throttle_factor=factor, used_bytes=used,
                   throttling_broker_id=broker_id if factor < 1.0 else None)
