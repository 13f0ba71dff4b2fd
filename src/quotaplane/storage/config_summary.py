"""The storage configuration as `quotaplane config check` shows it: text lines and plain JSON values."""

from __future__ import annotations

from quotaplane.core.javamath import LONG_MAX
from quotaplane.storage.config import StorageConfig, VolumeLimit
from quotaplane.storage.values import NANOS_PER_MS, format_duration_ns


def describe(config: StorageConfig) -> list[str]:
    """A short normalised summary, one `key: value` per line (used by `quotaplane config check`)."""

    def quota(v: float | None) -> str:
        return "unlimited" if v is None else f"{v:g}"

    lines = [f"dialect: {config.dialect}", f"source: {config.source}" +
             (" (deprecated)" if config.source == "local" else "")]
    if config.dialect == "strimzi":
        lines.append(f"check interval: {config.check_interval_ms // 1000} s" +
                     ("" if config.checks_enabled else " (storage checks disabled)"))
        breaker = " on any volume (circuit breaker: factor 0.0 or 1.0)"
        lines.append("limit: " + (config.hard.describe() + breaker if config.hard else "none"))
        assert config.validity_ns is not None
        lines.append(f"factor validity and cache expiry: {format_duration_ns(config.validity_ns)}")
        lines.append(f"fallback throttle factor: {config.fallback_factor:g}")
    else:
        lines.append(f"check interval: {config.check_interval_ms} ms" +
                     (" (polling disabled)" if config.check_interval_ms == 0 else ""))
        if config.source == "cluster":
            assert config.hard is not None and config.soft is not None
            soft = config.soft.describe()
            if not config.soft_configured:
                soft += " (defaults to the hard limit)"
            lines.append(f"soft limit: {soft} per volume")
            lines.append(f"hard limit: {config.hard.describe()} per volume")
        else:
            def legacy(v: int) -> str:
                return "unset" if v == LONG_MAX else f"{v} used bytes (aggregate)"

            lines.append(f"legacy soft limit: {legacy(config.legacy_soft_bytes)}")
            lines.append(f"legacy hard limit: {legacy(config.legacy_hard_bytes)}")
        lines.append(f"fallback throttle factor: {config.fallback_factor:g}")
    q = config.quotas
    lines.append(f"quotas: produce {quota(q.produce)}, fetch {quota(q.fetch)}, request {quota(q.request)}")
    lines.append("excluded principals: " + (", ".join(sorted(config.excluded_principals)) or "none"))
    bootstrap = config.admin.get("bootstrap.servers")
    others = len(config.admin) - (1 if bootstrap else 0)
    admin = f"bootstrap.servers={bootstrap}" if bootstrap else "bootstrap.servers unset"
    lines.append("admin client: " + admin + (f" (+{others} more properties)" if others else ""))
    return lines


def as_dict(config: StorageConfig) -> dict[str, object]:
    """The configuration as plain JSON-ready values."""

    def limit(lim: VolumeLimit | None) -> dict[str, object] | None:
        if lim is None:
            return None
        value: object = lim.value if lim.kind == "availableRatioBelow" else int(lim.value)
        return {"kind": lim.kind, "value": value, "property": lim.prop}

    out: dict[str, object] = {
        "dialect": config.dialect,
        "source": config.source,
        "check_interval_ms": config.check_interval_ms,
        "soft_limit": limit(config.soft),
        "soft_limit_configured": config.soft_configured,
        "hard_limit": limit(config.hard),
        "fallback_throttle_factor": config.fallback_factor,
        "quotas": {"produce": config.quotas.produce, "fetch": config.quotas.fetch,
                   "request": config.quotas.request},
        "excluded_principals": sorted(config.excluded_principals),
        "admin": dict(config.admin),
        "warnings": list(config.warnings),
    }
    if config.dialect == "spec" and config.source == "local":
        out["legacy_soft_bytes"] = None if config.legacy_soft_bytes == LONG_MAX else config.legacy_soft_bytes
        out["legacy_hard_bytes"] = None if config.legacy_hard_bytes == LONG_MAX else config.legacy_hard_bytes
    if config.dialect == "strimzi":
        out["validity_ms"] = (config.validity_ns or 0) / NANOS_PER_MS
        out["storage_checks_enabled"] = config.checks_enabled
    return out
