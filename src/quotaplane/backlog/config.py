"""Backlog-quota policies (Pulsar, PIP-323): broker defaults, namespace and topic quotas, as JSON.

```
{"broker":     {"backlogQuotaDefaultLimitBytes": 1073741824, ...},
 "namespaces": {"tenant/ns": QUOTAS},
 "topics":     {"persistent://tenant/ns/name": QUOTAS}}
QUOTAS = {"destination_storage": {"limitSize": BYTES, "policy": P},
          "message_age":         {"limitTime": SECONDS, "policy": P}}
```

Every problem is reported at once (`ConfigErrors`), each naming its key, e.g.
`namespaces[public/default].message_age.limitTime=abc: must be a whole number`.
See docs/backlog.md for every key, its default and its range.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from quotaplane.backlog.names import TOPIC_FORM, is_namespace_name, is_topic_name
from quotaplane.core.errors import ConfigError, ConfigErrors
from quotaplane.core.fields import decimal_text, integer_text, non_finite_text
from quotaplane.core.javamath import INT_MAX, INT_MIN, LONG_MAX, LONG_MIN
from quotaplane.core.jsonfile import load_json
from quotaplane.core.properties import closest_name

PRODUCER_REQUEST_HOLD = "producer_request_hold"
PRODUCER_EXCEPTION = "producer_exception"
CONSUMER_BACKLOG_EVICTION = "consumer_backlog_eviction"
RETENTION_POLICIES = (PRODUCER_REQUEST_HOLD, PRODUCER_EXCEPTION, CONSUMER_BACKLOG_EVICTION)

DESTINATION_STORAGE = "destination_storage"  # the size quota
MESSAGE_AGE = "message_age"  # the time quota
QUOTA_TYPES = (DESTINATION_STORAGE, MESSAGE_AGE)
LIMIT_KEY = {DESTINATION_STORAGE: "limitSize", MESSAGE_AGE: "limitTime"}

BYTES_IN_GIGABYTE = 1024 * 1024 * 1024

# Broker configuration keys (Pulsar ServiceConfiguration names) and their defaults.
LIMIT_BYTES = "backlogQuotaDefaultLimitBytes"
LIMIT_SECOND = "backlogQuotaDefaultLimitSecond"
LIMIT_GB = "backlogQuotaDefaultLimitGB"
RETENTION_POLICY = "backlogQuotaDefaultRetentionPolicy"
CHECK_INTERVAL = "backlogQuotaCheckIntervalInSeconds"
PRECISE_CHECK = "preciseTimeBasedBacklogQuotaCheck"
TOPIC_LEVEL_METRICS = "exposeTopicLevelMetricsInPrometheus"
CLUSTER_NAME = "clusterName"
BROKER_KEYS = (LIMIT_BYTES, LIMIT_SECOND, LIMIT_GB, RETENTION_POLICY, CHECK_INTERVAL, PRECISE_CHECK,
               TOPIC_LEVEL_METRICS, CLUSTER_NAME)
TOP_LEVEL_KEYS = ("broker", "namespaces", "topics")
DEFAULT_CLUSTER = "standalone"


@dataclass(frozen=True)
class Quota:
    """One entry of a `backlog_quota_map`: a limit (bytes for `destination_storage`, seconds for
    `message_age`) and the retention policy applied when it is exceeded."""

    limit: int
    policy: str


@dataclass(frozen=True)
class QuotaSet:
    """The quotas one namespace or topic sets; an absent type falls through to the next level."""

    size: Quota | None = None  # destination_storage
    time: Quota | None = None  # message_age

    def get(self, quota_type: str) -> Quota | None:
        return self.size if quota_type == DESTINATION_STORAGE else self.time


@dataclass(frozen=True)
class BrokerSettings:
    """The broker's backlog-quota settings (Pulsar `ServiceConfiguration`)."""

    default_limit_bytes: int = -1
    default_limit_second: int = -1
    default_limit_gb: float = -1.0
    default_retention_policy: str = PRODUCER_REQUEST_HOLD
    check_interval_seconds: int = 60
    precise_time_check: bool = False
    expose_topic_level_metrics: bool = True
    cluster_name: str = DEFAULT_CLUSTER

    @property
    def default_size_limit(self) -> int:
        """`backlogQuotaDefaultLimitGB` (deprecated) wins when > 0: `(long)(GB * 2^30)`;
        otherwise `backlogQuotaDefaultLimitBytes` (BacklogQuotaManager)."""
        if self.default_limit_gb > 0:
            return int(self.default_limit_gb * BYTES_IN_GIGABYTE)
        return self.default_limit_bytes

    @property
    def default_quotas(self) -> QuotaSet:
        """The broker-level quota of each type (one default `BacklogQuotaImpl` serves both)."""
        policy = self.default_retention_policy
        return QuotaSet(Quota(self.default_size_limit, policy), Quota(self.default_limit_second, policy))


@dataclass(frozen=True)
class BacklogPolicies:
    """The whole configuration: broker settings, namespace quotas and topic quotas."""

    broker: BrokerSettings = field(default_factory=BrokerSettings)
    namespaces: Mapping[str, QuotaSet] = field(default_factory=dict)
    topics: Mapping[str, QuotaSet] = field(default_factory=dict)


def load_backlog_policies(path: str | Path) -> BacklogPolicies:
    """Read and validate a policies JSON file; raise `ConfigError(s)` naming each bad key."""
    return parse_backlog_policies(load_json(path, "policies file"))


def parse_backlog_policies(document: Any) -> BacklogPolicies:
    """Validate an already-decoded policies document (see the module doc for its shape)."""
    errors: list[ConfigError] = []
    if not isinstance(document, dict):
        raise ConfigError("(policies)", _show(document), "must be a JSON object with keys "
                          + ", ".join(TOP_LEVEL_KEYS))
    for key in document:
        if key not in TOP_LEVEL_KEYS:
            errors.append(_unknown(key, key, document[key], TOP_LEVEL_KEYS))
    broker = _parse_broker(_object(document, "broker", "broker", errors), errors)
    namespaces = _parse_level(document, "namespaces", is_namespace_name, "tenant/namespace", broker, errors)
    topics = _parse_level(document, "topics", is_topic_name, TOPIC_FORM, broker, errors)
    if errors:
        raise ConfigErrors(errors)
    return BacklogPolicies(broker, namespaces, topics)


def _parse_broker(raw: Mapping[str, Any], errors: list[ConfigError]) -> BrokerSettings:
    for key in raw:
        if key not in BROKER_KEYS:
            errors.append(_unknown(f"broker.{key}", key, raw[key], BROKER_KEYS))
    d = BrokerSettings()

    def get(key: str, parse: Callable[[str, Any], Any], default: Any) -> Any:
        if key not in raw:
            return default
        try:
            return parse(f"broker.{key}", raw[key])
        except ConfigError as exc:
            errors.append(exc)
            return default

    return BrokerSettings(
        default_limit_bytes=get(LIMIT_BYTES, _long, d.default_limit_bytes),
        default_limit_second=get(LIMIT_SECOND, _int, d.default_limit_second),
        default_limit_gb=get(LIMIT_GB, _double, d.default_limit_gb),
        default_retention_policy=get(RETENTION_POLICY, _policy, d.default_retention_policy),
        check_interval_seconds=get(CHECK_INTERVAL, _interval, d.check_interval_seconds),
        precise_time_check=get(PRECISE_CHECK, _bool, d.precise_time_check),
        expose_topic_level_metrics=get(TOPIC_LEVEL_METRICS, _bool, d.expose_topic_level_metrics),
        cluster_name=get(CLUSTER_NAME, _name, d.cluster_name),
    )


def _parse_level(document: Mapping[str, Any], level: str, valid_name: Callable[[str], bool], form: str,
                 broker: BrokerSettings, errors: list[ConfigError]) -> dict[str, QuotaSet]:
    out: dict[str, QuotaSet] = {}
    for name, quotas in _object(document, level, level, errors).items():
        where = f"{level}[{name}]"
        if not valid_name(name):
            errors.append(ConfigError(where, name, f"the name must have the form {form}"))
            continue
        if not isinstance(quotas, dict):
            errors.append(ConfigError(where, _show(quotas), "must be a JSON object with keys "
                                      + " and/or ".join(QUOTA_TYPES)))
            continue
        for key in quotas:
            if key not in QUOTA_TYPES:
                errors.append(_unknown(f"{where}.{key}", key, quotas[key], QUOTA_TYPES))
        size = _parse_quota(quotas, DESTINATION_STORAGE, where, broker, errors)
        time = _parse_quota(quotas, MESSAGE_AGE, where, broker, errors)
        out[name] = QuotaSet(size, time)
    return out


def _parse_quota(quotas: Mapping[str, Any], quota_type: str, where: str, broker: BrokerSettings,
                 errors: list[ConfigError]) -> Quota | None:
    """One quota entry: its limit is required; the policy defaults to the broker's default
    retention policy; the other type's limit key (as `pulsar-admin` prints it) is accepted and
    ignored, but must still be a whole number."""
    if quota_type not in quotas:
        return None
    entry = quotas[quota_type]
    prefix = f"{where}.{quota_type}"
    if not isinstance(entry, dict):
        errors.append(ConfigError(prefix, _show(entry), "must be a JSON object with "
                                  f"{LIMIT_KEY[quota_type]} and policy"))
        return None
    limit_key = LIMIT_KEY[quota_type]
    other_key = LIMIT_KEY[MESSAGE_AGE if quota_type == DESTINATION_STORAGE else DESTINATION_STORAGE]
    known = (limit_key, "policy", other_key)
    for key in entry:
        if key not in known:
            errors.append(_unknown(f"{prefix}.{key}", key, entry[key], known))
    limit_parse = _long if quota_type == DESTINATION_STORAGE else _int
    limit: int | None = None
    policy = broker.default_retention_policy
    count = len(errors)
    if limit_key not in entry:
        errors.append(ConfigError(f"{prefix}.{limit_key}", "(missing)", "a quota needs its limit"))
    else:
        try:
            limit = limit_parse(f"{prefix}.{limit_key}", entry[limit_key])
        except ConfigError as exc:
            errors.append(exc)
    if other_key in entry:
        try:
            (_int if other_key == "limitTime" else _long)(f"{prefix}.{other_key}", entry[other_key])
        except ConfigError as exc:
            errors.append(exc)
    if "policy" in entry:
        try:
            policy = _policy(f"{prefix}.policy", entry["policy"])
        except ConfigError as exc:
            errors.append(exc)
    if len(errors) > count or limit is None:
        return None
    return Quota(limit, policy)


def _object(document: Mapping[str, Any], key: str, where: str, errors: list[ConfigError]) -> dict:
    value = document.get(key, {})
    if value is None:
        return {}
    if not isinstance(value, dict):
        errors.append(ConfigError(where, _show(value), "must be a JSON object"))
        return {}
    return value


def _whole(prop: str, value: Any, low: int, high: int) -> int:
    """A JSON whole number (`1000`, `1000.0`) or its text (`"1000"`, as broker.conf holds it)."""
    number: int
    if isinstance(value, bool):
        raise ConfigError(prop, _show(value), "must be a whole number")
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and integer_text(value.strip()):
        number = int(value.strip())
    else:
        raise ConfigError(prop, value if isinstance(value, str) else _show(value), "must be a whole number")
    if not low <= number <= high:
        raise ConfigError(prop, number, f"must be between {low} and {high}")
    return number


def _long(prop: str, value: Any) -> int:
    return _whole(prop, value, LONG_MIN, LONG_MAX)


def _int(prop: str, value: Any) -> int:
    return _whole(prop, value, INT_MIN, INT_MAX)


def _interval(prop: str, value: Any) -> int:
    seconds = _int(prop, value)
    if seconds < 1:
        raise ConfigError(prop, seconds, "must be at least 1")
    return seconds


def _double(prop: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ConfigError(prop, _show(value), "must be a number")
    if isinstance(value, str) and not decimal_text(value.strip()):
        raise ConfigError(prop, value, "must be a finite number" if non_finite_text(value.strip())
                          else "must be a number")
    try:
        number = float(value.strip()) if isinstance(value, str) else float(value)
    except OverflowError:
        raise ConfigError(prop, value, "must be a finite number") from None
    if not math.isfinite(number):
        raise ConfigError(prop, value, "must be a finite number")
    return number


def _bool(prop: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ConfigError(prop, _show(value), "must be true or false")


def _policy(prop: str, value: Any) -> str:
    if isinstance(value, str) and value in RETENTION_POLICIES:
        return value
    text = value if isinstance(value, str) else _show(value)
    guess = closest_name(text, RETENTION_POLICIES) if isinstance(value, str) else None
    hint = f"did you mean {guess}?" if guess else None
    raise ConfigError(prop, text, "must be one of " + ", ".join(RETENTION_POLICIES), hint)


def _name(prop: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(prop, _show(value), "must be a non-empty string")
    return value.strip()


def _unknown(prop: str, key: str, value: Any, known: tuple[str, ...]) -> ConfigError:
    guess = closest_name(key, known)
    return ConfigError(prop, _show(value), "unknown key", f"did you mean {guess}?" if guess else
                       "known keys: " + ", ".join(known))


def _show(value: Any) -> str:
    return json.dumps(value)
