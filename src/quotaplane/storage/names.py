"""Property names of the storage quota configuration, per dialect.

Two dialects (docs/storage-quotas.md, Configuration):

- `spec` (the default): the names of the cluster-wide volume quota proposal
  (spec: Configuration Summary, Hard/Soft Limit Configuration, Compatibility);
- `strimzi`: the names the shipped Strimzi plugin reads (`StaticQuotaConfig`), chosen with
  ``quotaplane.config.dialect=strimzi``.

A few names are read by both (the static quotas, the excluded principals and the check interval,
whose unit differs: milliseconds in `spec`, seconds in `strimzi`).
"""

from __future__ import annotations

from typing import Literal

Dialect = Literal["spec", "strimzi"]
LimitKind = Literal["availableBytesBelow", "availableRatioBelow", "usedBytesAbove"]
LimitLevel = Literal["soft", "hard"]

DIALECT_PROP = "quotaplane.config.dialect"
DIALECTS: tuple[Dialect, ...] = ("spec", "strimzi")

CALLBACK_PREFIX = "client.quota.callback."
STATIC = "client.quota.callback.static."

# Read by both dialects.
PRODUCE = STATIC + "produce"
FETCH = STATIC + "fetch"
REQUEST = STATIC + "request"
EXCLUDED_PRINCIPALS = STATIC + "excluded.principal.name.list"
CHECK_INTERVAL = STATIC + "storage.check-interval"
SHARED_NAMES: tuple[str, ...] = (PRODUCE, FETCH, REQUEST, EXCLUDED_PRINCIPALS, CHECK_INTERVAL)

# The spec dialect.
VOLUME_SOURCE = STATIC + "storage.volume.source"
FALLBACK_FACTOR = STATIC + "fallback.throttle.factor"
LEGACY_SOFT = STATIC + "storage.soft"
LEGACY_HARD = STATIC + "storage.hard"
SPEC_ADMIN_PREFIX = "client.quota.callback.kafka.admin."
SPEC_BOOTSTRAP = SPEC_ADMIN_PREFIX + "bootstrap.servers"
LIMIT_KINDS: tuple[LimitKind, ...] = ("availableBytesBelow", "availableRatioBelow", "usedBytesAbove")
LIMIT_LEVELS: tuple[LimitLevel, ...] = ("soft", "hard")


def per_volume_limit(kind: LimitKind, level: LimitLevel) -> str:
    """`...static.storage.perVolumeLimit.<kind>.<level>` (spec: Limit Type Configuration)."""
    return f"{STATIC}storage.perVolumeLimit.{kind}.{level}"


PER_VOLUME_LIMITS: tuple[str, ...] = tuple(
    per_volume_limit(k, lv) for k in LIMIT_KINDS for lv in LIMIT_LEVELS)
SPEC_NAMES: tuple[str, ...] = (VOLUME_SOURCE, FALLBACK_FACTOR, LEGACY_SOFT, LEGACY_HARD, SPEC_BOOTSTRAP,
                               *PER_VOLUME_LIMITS)

# The strimzi dialect (StaticQuotaConfig of the shipped plugin).
MIN_AVAILABLE_BYTES = STATIC + "storage.per.volume.limit.min.available.bytes"
MIN_AVAILABLE_RATIO = STATIC + "storage.per.volume.limit.min.available.ratio"
VALIDITY_DURATION = STATIC + "throttle.factor.validity.duration"
FACTOR_FALLBACK = STATIC + "throttle.factor.fallback"
STRIMZI_ADMIN_PREFIX = STATIC + "kafka.admin."
STRIMZI_BOOTSTRAP = STRIMZI_ADMIN_PREFIX + "bootstrap.servers"
CLIENT_ID_PREFIX = STATIC + "kafka.clientIdPrefix"
STRIMZI_NAMES: tuple[str, ...] = (MIN_AVAILABLE_BYTES, MIN_AVAILABLE_RATIO, VALIDITY_DURATION,
                                  FACTOR_FALLBACK, STRIMZI_BOOTSTRAP, CLIENT_ID_PREFIX)

# The other dialect's equivalent of a name, for the hint of a mixed-dialect error.
EQUIVALENT: dict[str, str] = {
    MIN_AVAILABLE_BYTES: per_volume_limit("availableBytesBelow", "hard"),
    MIN_AVAILABLE_RATIO: per_volume_limit("availableRatioBelow", "hard"),
    FACTOR_FALLBACK: FALLBACK_FACTOR,
    STRIMZI_BOOTSTRAP: SPEC_BOOTSTRAP,
    per_volume_limit("availableBytesBelow", "hard"): MIN_AVAILABLE_BYTES,
    per_volume_limit("availableRatioBelow", "hard"): MIN_AVAILABLE_RATIO,
    FALLBACK_FACTOR: FACTOR_FALLBACK,
    SPEC_BOOTSTRAP: STRIMZI_BOOTSTRAP,
}


def known_names(dialect: Dialect) -> tuple[str, ...]:
    """Every exact property name the dialect reads (admin client pass-through names excluded)."""
    own = SPEC_NAMES if dialect == "spec" else STRIMZI_NAMES
    return (*SHARED_NAMES, *own)


def admin_prefix(dialect: Dialect) -> str:
    """The prefix of the admin client pass-through properties (spec: Admin Client Configuration)."""
    return SPEC_ADMIN_PREFIX if dialect == "spec" else STRIMZI_ADMIN_PREFIX


def dialect_of(name: str) -> Dialect | None:
    """The one dialect a property name belongs to, or None for shared and unknown names."""
    if name in SHARED_NAMES:
        return None
    if name in SPEC_NAMES or name.startswith(SPEC_ADMIN_PREFIX):
        return "spec"
    if name in STRIMZI_NAMES or name.startswith(STRIMZI_ADMIN_PREFIX):
        return "strimzi"
    return None
