"""The storage quota configuration: parsed from `.properties`, validated, in one of two dialects.

`parse_storage_config(props)` returns a `StorageConfig` or raises `ConfigErrors` listing every
problem at once; warnings (deprecated `local` source, unknown `client.quota.callback.*` names with
the closest known one, limits with no effect) are returned on the config.

The rules are in docs/storage-quotas.md; each check below cites the spec section it implements
(spec: strimzi-cluster-wide-volume-quotas) or the shipped plugin's behaviour it reproduces.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeVar

from quotaplane.core.errors import ConfigError, ConfigErrors
from quotaplane.core.javamath import DOUBLE_MAX, INT_MAX, INT_MIN, LONG_MAX
from quotaplane.core.properties import closest_name, load_properties, parse_double, parse_long
from quotaplane.storage import names as N
from quotaplane.storage.names import Dialect, LimitKind, LimitLevel
from quotaplane.storage.values import (
    NANOS_PER_MS,
    format_duration_ns,
    parse_excluded_principals,
    parse_iso_duration_ns,
)

Source = Literal["local", "cluster"]
STRIMZI_DEFAULT_INTERVAL_S = 60
STRIMZI_DEFAULT_VALIDITY = "PT5M"

T = TypeVar("T")


@dataclass(frozen=True)
class VolumeLimit:
    """One per-volume limit (spec: Limit Type Configuration): tested against every volume."""

    kind: LimitKind
    value: float  # bytes kinds hold whole numbers
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


class _Collector:
    """Collects errors and warnings so that every problem is reported in one pass."""

    def __init__(self) -> None:
        self.errors: list[ConfigError] = []
        self.warnings: list[str] = []

    def error(self, prop: str, value: object, rule: str, hint: str | None = None) -> None:
        self.errors.append(ConfigError(prop, value, rule, hint))

    def warn(self, prop: str, value: object, text: str) -> None:
        self.warnings.append(f"{prop}={value}: {text}")

    def parse(self, fn: Callable[[], T], default: T) -> T:
        try:
            return fn()
        except ConfigError as exc:
            self.errors.append(exc)
            return default


def load_storage_config(path: str | Path) -> StorageConfig:
    """Load and validate a storage quota `.properties` file; raise `ConfigErrors` with every error."""
    props = load_properties(path)
    try:
        config = parse_storage_config(props)
    except ConfigError as exc:  # pragma: no cover - parse_storage_config raises ConfigErrors
        raise ConfigErrors([exc]) from None
    return _with_path(config, str(path))


def _with_path(config: StorageConfig, path: str) -> StorageConfig:
    from dataclasses import replace

    return replace(config, path=path)


def parse_storage_config(props: Mapping[str, str]) -> StorageConfig:
    """Validate properties and build the `StorageConfig`; raise `ConfigErrors` listing every error."""
    c = _Collector()
    dialect = _dialect(props, c)
    _check_names(props, dialect, c)
    quotas = _quotas(props, c)
    excluded = _excluded(props, c)
    if dialect == "strimzi":
        config = _strimzi(props, c, quotas, excluded)
    else:
        config = _spec(props, c, quotas, excluded)
    if c.errors:
        raise ConfigErrors(c.errors)
    from dataclasses import replace

    return replace(config, warnings=tuple(c.warnings))


def _dialect(props: Mapping[str, str], c: _Collector) -> Dialect:
    raw = props.get(N.DIALECT_PROP)
    if raw is None:
        return "spec"
    value = raw.strip()
    if value not in N.DIALECTS:
        c.error(N.DIALECT_PROP, raw, "must be spec or strimzi",
                "spec: the proposal's property names (default); strimzi: the shipped plugin's names")
        return "spec"
    return value  # type: ignore[return-value]


def _check_names(props: Mapping[str, str], dialect: Dialect, c: _Collector) -> None:
    """Mixed dialects are an error; unknown callback names get a warning naming the closest known one."""
    known = (*N.known_names(dialect), N.DIALECT_PROP)
    for name, value in props.items():
        if not (name.startswith(N.CALLBACK_PREFIX) or name.startswith("quotaplane.")):
            continue
        owner = N.dialect_of(name)
        if owner is not None and owner != dialect:
            equivalent = N.EQUIVALENT.get(name)
            hint = f"set {N.DIALECT_PROP}={owner} and use only its names"
            if equivalent:
                hint += f", or use {equivalent} in the {dialect} dialect"
            c.error(name, value, f"belongs to the {owner} dialect but the dialect is {dialect}: "
                    "names of the two dialects cannot be mixed", hint)
            continue
        if name in known or name.startswith(N.admin_prefix(dialect)):
            continue
        guess = closest_name(name, known)
        text = f"unknown property of the {dialect} dialect, ignored"
        c.warn(name, value, text + (f" (did you mean {guess}?)" if guess else ""))


def _quotas(props: Mapping[str, str], c: _Collector) -> StaticQuotas:
    """The static quotas: DOUBLE, default unlimited (`Double.MAX_VALUE`), no range check (as shipped)."""
    values: list[float | None] = []
    for prop in (N.PRODUCE, N.FETCH, N.REQUEST):
        value = c.parse(lambda p=prop: parse_double(props, p, None), None)
        if value is not None and value < 0:
            c.warn(prop, props[prop], "a negative quota acts as 1 (the limit never goes below 1)")
        values.append(None if value is None or value >= DOUBLE_MAX else value)
    return StaticQuotas(*values)


def _excluded(props: Mapping[str, str], c: _Collector) -> frozenset[str]:
    """`excluded.principal.name.list`: `User:<name>` entries separated by `;` (as shipped)."""
    raw = props.get(N.EXCLUDED_PRINCIPALS)
    if raw is None:
        return frozenset()
    names, rejected = parse_excluded_principals(raw)
    for entry in rejected:
        c.error(N.EXCLUDED_PRINCIPALS, raw, f'invalid entry "{entry}": missing User: prefix',
                "write User:<name> entries separated by ;, e.g. User:canary;User:cruise-control")
    return names


def _in_range(c: _Collector, prop: str, raw: str, value: float | None, low: float,
              high: float | None) -> bool:
    if value is None:
        return True
    if value < low or (high is not None and value > high):
        rule = f"must be at least {low:g}" if high is None else \
            f"must be between {low:.1f} and {high:.1f} inclusive"
        c.error(prop, raw, rule)
        return False
    return True


# ---------------------------------------------------------------- the spec dialect


def _spec(props: Mapping[str, str], c: _Collector, quotas: StaticQuotas,
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
    if not _in_range(c, N.FALLBACK_FACTOR, props.get(N.FALLBACK_FACTOR, ""), fallback, 0.0, 1.0):
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
        _in_range(c, prop, props[prop], value, 0, None)
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


def _per_volume_limit(props: Mapping[str, str], c: _Collector, kind: LimitKind,
                      level: LimitLevel) -> VolumeLimit | None:
    """One `perVolumeLimit.<kind>.<level>`: bytes kinds are LONG >= 0, the ratio a DOUBLE in [0.0, 1.0]."""
    prop = N.per_volume_limit(kind, level)
    if prop not in props:
        return None
    if kind == "availableRatioBelow":
        value: float | None = c.parse(lambda: parse_double(props, prop, None), None)
        ok = _in_range(c, prop, props[prop], value, 0.0, 1.0)
    else:
        whole = c.parse(lambda: parse_long(props, prop, None), None)
        value = float(whole) if whole is not None else None
        ok = _in_range(c, prop, props[prop], whole, 0, None)
    if value is None or not ok:
        return None
    return VolumeLimit(kind, value, prop)


def _choose_limits(c: _Collector, source: Source, limits: dict[LimitLevel, list[VolumeLimit]],
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


def _legacy_warnings(props: Mapping[str, str], c: _Collector, soft: int | None, hard: int | None,
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


def _strimzi(props: Mapping[str, str], c: _Collector, quotas: StaticQuotas,
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
    if not _in_range(c, N.MIN_AVAILABLE_BYTES, props.get(N.MIN_AVAILABLE_BYTES, ""), min_bytes, 0, None):
        min_bytes = None
    min_ratio = c.parse(lambda: parse_double(props, N.MIN_AVAILABLE_RATIO, None), None)
    if not _in_range(c, N.MIN_AVAILABLE_RATIO, props.get(N.MIN_AVAILABLE_RATIO, ""), min_ratio, 0.0, 1.0):
        min_ratio = None
    fallback = c.parse(lambda: parse_double(props, N.FACTOR_FALLBACK, 1.0), 1.0)
    if not _in_range(c, N.FACTOR_FALLBACK, props.get(N.FACTOR_FALLBACK, ""), fallback, 0.0, 1.0):
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
        hard = VolumeLimit("availableBytesBelow", float(min_bytes), N.MIN_AVAILABLE_BYTES)
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


# ---------------------------------------------------------------- summaries


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
