"""Storage volume quotas, the reference engine (spec: strimzi-cluster-wide-volume-quotas).

Pure Python, no Spark: `Volume`; the per-volume limit arithmetic (`limits`); one evaluation of the
cluster source (`evaluate_cluster`), of the deprecated local source (`evaluate_local`), the shipped
strimzi throttle with validity and cache (`StrimziThrottle`); rounds and whole histories
(`group_rounds`, `evaluate_rounds`); effective client limits. The rules are in docs/storage-quotas.md.
"""

from quotaplane.storage.engine.cluster import evaluate_cluster
from quotaplane.storage.engine.decisions import (
    MISSING_BROKER_DATA,
    Decision,
    EffectiveLimits,
    effective_limits,
    effective_produce_limit,
)
from quotaplane.storage.engine.limits import Assessment, assess, breached, legacy_factor, threshold_bytes
from quotaplane.storage.engine.local import evaluate_local
from quotaplane.storage.engine.rounds import Round, evaluate_rounds, group_rounds
from quotaplane.storage.engine.strimzi import FACTOR_EXPIRED, StrimziThrottle
from quotaplane.storage.engine.volume import Volume

__all__ = [
    "FACTOR_EXPIRED",
    "MISSING_BROKER_DATA",
    "Assessment",
    "Decision",
    "EffectiveLimits",
    "Round",
    "StrimziThrottle",
    "Volume",
    "assess",
    "breached",
    "effective_limits",
    "effective_produce_limit",
    "evaluate_cluster",
    "evaluate_local",
    "evaluate_rounds",
    "group_rounds",
    "legacy_factor",
    "threshold_bytes",
]
