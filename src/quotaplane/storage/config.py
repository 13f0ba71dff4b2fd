"""The storage quota configuration: parsed from `.properties`, validated, in one of two dialects.

`parse_storage_config(props)` returns a `StorageConfig` or raises `ConfigErrors` listing every
problem at once; warnings (deprecated `local` source, unknown `client.quota.callback.*` names with
the closest known one, limits with no effect) are returned on the config. The checks common to both
dialects are in `quotaplane.storage.config_checks`, the text and JSON forms of a configuration in
`quotaplane.storage.config_summary`.

The rules are in docs/storage-quotas.md; each check below cites the spec section it implements
(spec: strimzi-cluster-wide-volume-quotas) or the shipped plugin's behaviour it reproduces.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from quotaplane.core.errors import ConfigError, ConfigErrors
from quotaplane.core.javamath import DOUBLE_MAX, INT_MAX, INT_MIN, LONG_MAX
from quotaplane.core.properties import load_properties, parse_double, parse_long
from quotaplane.storage import names as N
from quotaplane.storage.config_checks import Collector, check_names, in_range, read_dialect, read_excluded
from quotaplane.storage.names import Dialect, LimitKind, LimitLevel
from quotaplane.storage.values import NANOS_PER_MS, parse_iso_duration_ns

Source = Literal["local", "cluster"]
STRIMZI_DEFAULT_INTERVAL_S = 60
STRIMZI_DEFAULT_VALIDITY = "PT5M"


@dataclass(frozen=True)
class VolumeLimit:
    """One per-volume limit (spec: Limit Type Configuration): tested against every volume."""

    kind: LimitKind
    value: int | float  # an int (exact) for the bytes kinds, a float for the ratio
    prop: str

    def describe(self) -> str:
        if self.kind == "availableRatioBelow":
            return f"availableRatio <= {self.value:g}"
        if self.kind == "availableBytesBelow":
            return f"availableBytes <= {int(self.value)}"
        return f"usedBytes >= {int(self.value)}"


@dataclass(frozen=True)
class StaticQuotas:
    """The static broker-wide quotas (`client.quota.callback.static.{produce,fetch,request}`).

    None means unlimited (the shipped default, `Double.MAX_VALUE`).
    """

    produce: float | None = None
    fetch: float | None = None
    request: float | None = None


@dataclass(frozen=True)
class StorageConfig:
    """A validated storage quota configuration.

    `soft` is the effective soft limit: the configured one, or the hard limit when none is set
    (spec: Limit Type Configuration, "soft-limit==hard-limit"). `legacy_*` are the deprecated
    aggregate used-bytes limits of the `local` source (spec: Compatibility). `validity_ns` and
    `checks_enabled` belong to the strimzi dialect (shipped plugin semantics).
    """

    dialect: Dialect = "spec"
    source: Source = "local"
    check_interval_ms: int = 0
    hard: VolumeLimit | None = None
    soft: VolumeLimit | None = None
    soft_configured: bool = False
    legacy_soft_bytes: int = LONG_MAX
    legacy_hard_bytes: int = LONG_MAX
    legacy_configured: bool = False
    fallback_factor: float = 1.0
    validity_ns: int | None = None
    checks_enabled: bool = True
    quotas: StaticQuotas = field(default_factory=StaticQuotas)
    excluded_principals: frozenset[str] = frozenset()
    admin: Mapping[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    path: str | None = None

    @property
    def evaluation(self) -> Literal["cluster", "local", "strimzi"]:
        """How decisions are made, and the `source` column of `storage_decisions`."""
        return "strimzi" if self.dialect == "strimzi" else self.source

    @property
    def validity_expired_after_ms(self) -> int:
        """Whole ms `d` since `validFrom` with `d > validity` (strict expiry) are exactly `d > this`."""
        assert self.validity_ns is not None
        return self.validity_ns // NANOS_PER_MS

    @property
    def validity_evicted_from_ms(self) -> int:
        """Whole ms `d` since `observedAt` with `d >= validity` (inclusive eviction): `d >= this`."""
        assert self.validity_ns is not None
        return -((-self.validity_ns) // NANOS_PER_MS)


def load_storage_config(path: str | Path) -> StorageConfig:
    """Load and validate a storage quota `.properties` file; raise `ConfigErrors` with every error."""
    props = load_properties(path)
    try:
        config = parse_storage_config(props)
    except ConfigError as exc:  # pragma: no cover - parse_storage_config raises ConfigErrors
        raise ConfigErrors([exc]) from None
    return replace(config, path=str(path))


def parse_storage_config(props: Mapping[str, str]) -> StorageConfig:
    """Validate properties and build the `StorageConfig`; raise `ConfigErrors` listing every error."""
    c = Collector()
    dialect = read_dialect(props, c)
    check_names(props, dialect, c)
    quotas = _quotas(props, c)
    excluded = read_excluded(props, c)
    if dialect == "strimzi":
        config = _strimzi(props, c, quotas, excluded)
    else:
        config = _spec(props, c, quotas, excluded)
    if c.errors:
        raise ConfigErrors(c.errors)
    return replace(config, warnings=tuple(c.warnings))


def _quotas(props: Mapping[str, str], c: Collector) -> StaticQuotas:
    """The static quotas: DOUBLE, default unlimited (`Double.MAX_VALUE`), no range check (as shipped)."""
    values: list[float | None] = []
    for prop in (N.PRODUCE, N.FETCH, N.REQUEST):
        value = c.parse(lambda p=prop: parse_double(props, p, None), None)
        if value is not None and value < 0:
            c.warn(prop, props[prop], "a negative quota acts as 1 (the limit never goes below 1)")
        values.append(None if value is None or value >= DOUBLE_MAX else value)
    return StaticQuotas(*values)


# ---------------------------------------------------------------- the spec dialect


def _spec(props: Mapping[str, str], c: Collector, quotas: StaticQuotas,
          excluded: frozenset[str]) -> StorageConfig:
    raw_source = props.get(N.VOLUME_SOURCE)
    source: Source = "local"
    if raw_source is not None:
        value = raw_source.strip()
        if value in ("local", "cluster"):
            source = value  # type: ignore[assignment]
        else:
            c.error(N.VOLUME_SOURCE, raw_source, "must be local or cluster",
                    "cluster observes every active broker's volumes; local (deprecated) only this broker's")
    if source == "local" and (raw_source is None or raw_source.strip() == "local"):
        c.warn(N.VOLUME_SOURCE, raw_source if raw_source is not None else "local (default)",
               "the local volume source is deprecated: it sees only the observing broker's own volumes "
               f"and misses a disk filled by replication; set {N.VOLUME_SOURCE}=cluster")

    interval = c.parse(lambda: parse_long(props, N.CHECK_INTERVAL, 0), 0) or 0
    if interval < 0:
        c.error(N.CHECK_INTERVAL, props[N.CHECK_INTERVAL], "must be at least 0",
                "milliseconds between polls; 0 disables polling")
        interval = 0
    elif interval == 0 and N.CHECK_INTERVAL in props:
        c.warn(N.CHECK_INTERVAL, props[N.CHECK_INTERVAL],
               "0 disables polling in a live broker; backtests still evaluate every recorded round")

    fallback = c.parse(lambda: parse_double(props, N.FALLBACK_FACTOR, 1.0), 1.0)
    if not in_range(c, N.FALLBACK_FACTOR, props.get(N.FALLBACK_FACTOR, ""), fallback, 0.0, 1.0):
        fallback = 1.0

    limits: dict[LimitLevel, list[VolumeLimit]] = {"soft": [], "hard": []}
    for kind in N.LIMIT_KINDS:
        for level in N.LIMIT_LEVELS:
            limit = _per_volume_limit(props, c, kind, level)
            if limit is not None:
                limits[level].append(limit)
    hard, soft = _choose_limits(c, source, limits)

    legacy_soft = c.parse(lambda: parse_long(props, N.LEGACY_SOFT, None), None)
    legacy_hard = c.parse(lambda: parse_long(props, N.LEGACY_HARD, None), None)
    for prop, value in ((N.LEGACY_SOFT, legacy_soft), (N.LEGACY_HARD, legacy_hard)):
        if value is None:
            continue
        in_range(c, prop, props[prop], value, 0, None)
        if source == "cluster":
            level: LimitLevel = "soft" if prop == N.LEGACY_SOFT else "hard"
            c.error(prop, props[prop], "the legacy aggregate limit works only with the local volume source",
                    f"use {N.per_volume_limit('usedBytesAbove', level)} for a per-volume used-bytes limit")
    if source == "local":
        _legacy_warnings(props, c, legacy_soft, legacy_hard, limits)

    admin = {k[len(N.SPEC_ADMIN_PREFIX):]: v for k, v in props.items() if k.startswith(N.SPEC_ADMIN_PREFIX)}
    return StorageConfig(
        dialect="spec", source=source, check_interval_ms=interval, hard=hard,
        soft=soft if soft is not None else hard, soft_configured=soft is not None,
        legacy_soft_bytes=legacy_soft if legacy_soft is not None else LONG_MAX,
        legacy_hard_bytes=legacy_hard if legacy_hard is not None else LONG_MAX,
        legacy_configured=legacy_soft is not None or legacy_hard is not None,
        fallback_factor=fallback if fallback is not None else 1.0, quotas=quotas,
        excluded_principals=excluded, admin=admin,
    )


def _per_volume_limit(props: Mapping[str, str], c: Collector, kind: LimitKind,
                      level: LimitLevel) -> VolumeLimit | None:
    """One `perVolumeLimit.<kind>.<level>`: bytes kinds are LONG >= 0, the ratio a DOUBLE in [0.0, 1.0]."""
    prop = N.per_volume_limit(kind, level)
    if prop not in props:
        return None
    if kind == "availableRatioBelow":
        value: int | float | None = c.parse(lambda: parse_double(props, prop, None), None)
        ok = in_range(c, prop, props[prop], value, 0.0, 1.0)
    else:
        whole = c.parse(lambda: parse_long(props, prop, None), None)
        value = whole
        ok = in_range(c, prop, props[prop], whole, 0, None)
    if value is None or not ok:
        return None
    return VolumeLimit(kind, value, prop)


def _choose_limits(c: Collector, source: Source, limits: dict[LimitLevel, list[VolumeLimit]],
                   ) -> tuple[VolumeLimit | None, VolumeLimit | None]:
    """spec: Limit Type Configuration: exactly one hard limit (cluster source), at most one soft."""
    if source == "local":
        for limit in (*limits["hard"], *limits["soft"]):
            c.error(limit.prop, _fmt(limit), "per-volume limits need the cluster volume source",
                    f"set {N.VOLUME_SOURCE}=cluster, or use the legacy {N.LEGACY_SOFT}/{N.LEGACY_HARD}")
        return None, None
    hard_list, soft_list = limits["hard"], limits["soft"]
    for level, items in (("hard", hard_list), ("soft", soft_list)):
        for extra in items[1:]:
            c.error(extra.prop, _fmt(extra), f"only one {level} limit may be set, and {items[0].prop} is set",
                    "limit types can be mixed only between the soft and the hard limit")
    if not hard_list:
        for soft in soft_list:
            c.error(soft.prop, _fmt(soft), "a soft limit needs a hard limit",
                    f"set the matching {soft.prop.rsplit('.', 1)[0]}.hard")
        if not soft_list:
            c.error(N.VOLUME_SOURCE, "cluster", "the cluster volume source needs exactly one hard limit",
                    "set one of " + ", ".join(N.per_volume_limit(k, "hard") for k in N.LIMIT_KINDS))
        return None, None
    hard = hard_list[0]
    soft = soft_list[0] if soft_list else None
    if soft is not None and soft.kind == hard.kind:
        later = soft.value < hard.value if soft.kind != "usedBytesAbove" else soft.value > hard.value
        if later:
            c.warn(soft.prop, _fmt(soft), f"the soft limit is reached after the hard limit ({_fmt(hard)}): "
                   "throttling will be a step at the hard limit")
    return hard, soft


def _legacy_warnings(props: Mapping[str, str], c: Collector, soft: int | None, hard: int | None,
                     limits: dict[LimitLevel, list[VolumeLimit]]) -> None:
    if soft is not None and hard is None:
        c.warn(N.LEGACY_SOFT, props[N.LEGACY_SOFT], f"no {N.LEGACY_HARD}: the ramp ends at 2^63-1 bytes, "
               "so the soft limit has almost no effect")
    if soft is not None and hard is not None and soft >= hard:
        c.warn(N.LEGACY_SOFT, props[N.LEGACY_SOFT], f"not below {N.LEGACY_HARD}={hard}: "
               "throttling will be a step at the hard limit")
    if soft is None and hard is None and not limits["hard"] and not limits["soft"]:
        c.warn(N.VOLUME_SOURCE, "local", "no storage limit is configured: the throttle factor is always 1.0")


def _fmt(limit: VolumeLimit) -> str:
    return f"{int(limit.value)}" if limit.kind != "availableRatioBelow" else f"{limit.value:g}"


# ---------------------------------------------------------------- the strimzi dialect


def _strimzi(props: Mapping[str, str], c: Collector, quotas: StaticQuotas,
             excluded: frozenset[str]) -> StorageConfig:
    """The shipped plugin's `StaticQuotaConfig` and `StaticQuotaCallback.configure` rules."""
    interval_s = STRIMZI_DEFAULT_INTERVAL_S
    raw_interval = props.get(N.CHECK_INTERVAL)
    if raw_interval is not None:
        text = raw_interval.strip()
        digits = text[1:] if text[:1] in "+-" else text
        if digits.isascii() and digits.isdigit() and INT_MIN <= int(text) <= INT_MAX:
            interval_s = int(text)
        else:
            c.error(N.CHECK_INTERVAL, raw_interval, "not a number of type INT",
                    "whole seconds in the strimzi dialect (milliseconds in the spec dialect)")

    min_bytes = c.parse(lambda: parse_long(props, N.MIN_AVAILABLE_BYTES, None), None)
    if not in_range(c, N.MIN_AVAILABLE_BYTES, props.get(N.MIN_AVAILABLE_BYTES, ""), min_bytes, 0, None):
        min_bytes = None
    min_ratio = c.parse(lambda: parse_double(props, N.MIN_AVAILABLE_RATIO, None), None)
    if not in_range(c, N.MIN_AVAILABLE_RATIO, props.get(N.MIN_AVAILABLE_RATIO, ""), min_ratio, 0.0, 1.0):
        min_ratio = None
    fallback = c.parse(lambda: parse_double(props, N.FACTOR_FALLBACK, 1.0), 1.0)
    if not in_range(c, N.FACTOR_FALLBACK, props.get(N.FACTOR_FALLBACK, ""), fallback, 0.0, 1.0):
        fallback = 1.0

    raw_validity = props.get(N.VALIDITY_DURATION, STRIMZI_DEFAULT_VALIDITY)
    validity = parse_iso_duration_ns(raw_validity.strip())
    if validity is None:
        c.error(N.VALIDITY_DURATION, raw_validity, "Failed to parse iso8601 duration",
                "e.g. PT5M (5 minutes), PT30S, PT1H")
        validity = 300 * 10**9

    if interval_s > 0 and min_bytes is not None and min_ratio is not None:
        c.error(N.MIN_AVAILABLE_BYTES, props[N.MIN_AVAILABLE_BYTES],
                f"Both limit types configured, only configure one of "
                f"[{N.MIN_AVAILABLE_BYTES},{N.MIN_AVAILABLE_RATIO}]")
    hard: VolumeLimit | None = None
    if min_bytes is not None:
        hard = VolumeLimit("availableBytesBelow", min_bytes, N.MIN_AVAILABLE_BYTES)
    elif min_ratio is not None:
        hard = VolumeLimit("availableRatioBelow", min_ratio, N.MIN_AVAILABLE_RATIO)
    enabled = interval_s > 0 and hard is not None
    if interval_s <= 0:
        c.warn(N.CHECK_INTERVAL, interval_s, "storage checks are disabled (interval <= 0): "
               "the throttle factor is always 1.0")
    elif hard is None:
        c.warn(N.CHECK_INTERVAL, interval_s, "no volume size limits configured, storage check disabled: "
               "the throttle factor is always 1.0")
    if validity <= 0:
        c.warn(N.VALIDITY_DURATION, raw_validity, "not positive: every factor is expired at once and every "
               "cached observation is evicted when it is made")
    bootstrap = props.get(N.STRIMZI_BOOTSTRAP, "").strip()
    if not bootstrap:
        c.warn(N.STRIMZI_BOOTSTRAP, props.get(N.STRIMZI_BOOTSTRAP, "(unset)"),
               "the shipped plugin refuses to start without it; quotaplane needs it only for a live source")
    admin = {k[len(N.STRIMZI_ADMIN_PREFIX):]: v for k, v in props.items()
             if k.startswith(N.STRIMZI_ADMIN_PREFIX)}
    return StorageConfig(
        dialect="strimzi", source="cluster", check_interval_ms=interval_s * 1000, hard=hard, soft=hard,
        soft_configured=False, fallback_factor=fallback if fallback is not None else 1.0,
        validity_ns=validity, checks_enabled=enabled, quotas=quotas, excluded_principals=excluded,
        admin=admin,
    )


@dataclass(frozen=True)
class StorageRunConfig:
    """The storage configuration of a run, and the one evaluated beside it for comparison."""

    main: StorageConfig
    compare: StorageConfig | None = None
