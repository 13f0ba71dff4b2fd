"""Small builders shared by the storage reference engine tests."""

from __future__ import annotations

from quotaplane.storage import names as N
from quotaplane.storage.config import StorageConfig, parse_storage_config

S = "client.quota.callback.static."


def cluster_config(soft: tuple[str, str] | None, hard: tuple[str, str], fallback: str | None = None,
                   **extra: str) -> StorageConfig:
    props = {N.VOLUME_SOURCE: "cluster", N.per_volume_limit(hard[0], "hard"): hard[1]}  # type: ignore[arg-type]
    if soft is not None:
        props[N.per_volume_limit(soft[0], "soft")] = soft[1]  # type: ignore[arg-type]
    if fallback is not None:
        props[N.FALLBACK_FACTOR] = fallback
    props.update({S + k.replace("_", "."): v for k, v in extra.items()})
    return parse_storage_config(props)


def local_config(soft: int | None, hard: int | None, fallback: str | None = None) -> StorageConfig:
    props: dict[str, str] = {N.VOLUME_SOURCE: "local"}
    if soft is not None:
        props[N.LEGACY_SOFT] = str(soft)
    if hard is not None:
        props[N.LEGACY_HARD] = str(hard)
    if fallback is not None:
        props[N.FALLBACK_FACTOR] = fallback
    return parse_storage_config(props)


def strimzi_config(limit: tuple[str, str] | None = ("bytes", "100"), validity: str = "PT2M",
                   fallback: str = "0.0", interval: str = "60") -> StorageConfig:
    props = {N.DIALECT_PROP: "strimzi", N.STRIMZI_BOOTSTRAP: "k:9092", N.VALIDITY_DURATION: validity,
             N.FACTOR_FALLBACK: fallback, N.CHECK_INTERVAL: interval}
    if limit is not None:
        props[N.MIN_AVAILABLE_BYTES if limit[0] == "bytes" else N.MIN_AVAILABLE_RATIO] = limit[1]
    return parse_storage_config(props)
