"""Loading and validating Kafka client quota configuration, and the broker settings quotas use.

Two formats (spec: Kafka `ClientQuotaControlManager`, `kafka-configs.sh`):

- JSON: a list of `{"entity": {"user": NAME, "client-id": NAME}, "quotas": {KEY: NUMBER}}`, where
  either entity key may be absent and `"<default>"` names the default entity;
- the text `kafka-configs.sh --describe` prints for users and clients, one entity per line:
  `Quota configs for user-principal 'alice', the default client-id are producer_byte_rate=1024.0`
  (the older `Configs for ...` form too; SCRAM credential lines are skipped).

Rules, each error naming the entity (or line) and the key: the keys are `producer_byte_rate`,
`consumer_byte_rate` (whole numbers, within 1e-6 as Kafka accepts), `request_percentage` and
`controller_mutation_rate`; values are finite, non-negative numbers; an entity has a `user`, a
`client-id` or both, names are non-empty strings; `ip` entities (connection-rate quotas) and
duplicate entities or keys are refused.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from quotaplane.clients.engine.entities import DEFAULT, DEFAULT_NAME, ClientQuotaConfig, Part, QuotaEntity
from quotaplane.clients.engine.quota_types import CONFIG_KEY, LONG_KEYS
from quotaplane.clients.engine.settings import ClientQuotaSettings
from quotaplane.core.errors import ConfigError, ConfigErrors
from quotaplane.core.javamath import DOUBLE_MAX, INT_MAX, LONG_MAX
from quotaplane.core.jsonfile import parse_json, read_text
from quotaplane.core.properties import (
    closest_name,
    double_value,
    load_properties,
    parse_bool,
    parse_double,
    parse_long,
)

QUOTA_KEYS: tuple[str, ...] = tuple(CONFIG_KEY.values())
ENTITY_KEYS = ("user", "client-id")
LONG_EPSILON = 1e-6

# Broker properties read for client quotas, with Kafka's defaults.
WINDOW_NUM = "quota.window.num"
WINDOW_SIZE_SECONDS = "quota.window.size.seconds"
CONTROLLER_WINDOW_NUM = "controller.quota.window.num"
CONTROLLER_WINDOW_SIZE_SECONDS = "controller.quota.window.size.seconds"
METRICS_NUM_SAMPLES = "metrics.num.samples"
METRICS_SAMPLE_WINDOW_MS = "metrics.sample.window.ms"
VALUE_METRIC_ENABLE = "client.quota.value.metric.enable"
STATIC_PRODUCE = "client.quota.callback.static.produce"

_USER = r"(?:user-principal '(?P<user>.*?)'|(?P<user_default>(?:the )?default user-principal))"
_CLIENT = r"(?:client-id '(?P<client>.*?)'|(?P<client_default>(?:the )?default client-id))"
_DESCRIBE_LINE = re.compile(
    rf"^(?:Quota )?[Cc]onfigs for (?:{_USER})?(?P<sep>, )?(?:{_CLIENT})? are(?:\s+(?P<entries>.*?))?\s*$")
_IP_LINE = re.compile(r"^(?:Quota )?[Cc]onfigs for (?:ip '.*'|(?:the )?default ip) are")
_SKIPPED_LINES = ("SCRAM credential configs for", "Error retrieving SCRAM credential configs")


def load_client_quotas(path: str | Path) -> ClientQuotaConfig:
    """Load a client quota file, JSON or `kafka-configs.sh --describe` text (told apart by content)."""
    return parse_client_quotas(read_text(path, "client quota file"), str(path))


def parse_client_quotas(text: str, source: str = "") -> ClientQuotaConfig:
    stripped = text.lstrip()
    if stripped.startswith(("[", "{")):
        return parse_client_quotas_json(text, source)
    return parse_describe_output(text, source)


class _Collector:
    """Builds the entity map and collects every error found in one pass."""

    def __init__(self) -> None:
        self.errors: list[ConfigError] = []
        self.quotas: dict[QuotaEntity, dict[str, float]] = {}

    def error(self, prop: str, value: object, rule: str, hint: str | None = None) -> None:
        self.errors.append(ConfigError(prop, value, rule, hint))

    def add(self, where: str, entity: QuotaEntity, values: Mapping[str, Any]) -> None:
        name = f"[{entity.describe()}]"
        if entity in self.quotas:
            self.error(f"{where} {name}", "", "duplicate entity: each entity may appear once",
                       "merge its quotas into one entry")
            return
        checked: dict[str, float] = {}
        for key, raw in values.items():
            value = self.check_value(f"{name} {key}", key, raw)
            if value is not None:
                checked[key] = value
        self.quotas[entity] = checked

    def check_value(self, prop: str, key: str, raw: object) -> float | None:
        if key not in QUOTA_KEYS:
            near = closest_name(key, QUOTA_KEYS)
            self.error(prop, raw, f"unknown quota key; the keys are {', '.join(QUOTA_KEYS)}",
                       f"did you mean {near}?" if near else None)
            return None
        if isinstance(raw, bool) or not isinstance(raw, int | float):
            self.error(prop, json.dumps(raw), "must be a number")
            return None
        value = float(raw)
        if not math.isfinite(value):
            self.error(prop, raw, "must be a finite number")
            return None
        if value < 0:
            self.error(prop, raw, "must not be negative (a quota is a rate; 0 blocks the client)")
            return None
        if key in LONG_KEYS and abs(float(int(value + LONG_EPSILON)) - value) > LONG_EPSILON:
            self.error(prop, raw, f"must be a whole number ({key} is a LONG in Kafka)")
            return None
        if key in LONG_KEYS and value > LONG_MAX:
            self.error(prop, raw, f"is out of the range of a LONG ({key} is a LONG in Kafka)")
            return None
        return value

    def result(self, source: str) -> ClientQuotaConfig:
        if len(self.errors) == 1:
            raise self.errors[0]
        if self.errors:
            raise ConfigErrors(self.errors)
        return ClientQuotaConfig(self.quotas, source)


def parse_client_quotas_json(text: str, source: str = "") -> ClientQuotaConfig:
    """The JSON list format; every error in the file is reported at once."""
    where = source or "client quotas"
    data = parse_json(text, where)
    if not isinstance(data, list):
        raise ConfigError(where, type(data).__name__,
                          'must be a JSON list of {"entity": {...}, "quotas": {...}}')
    collector = _Collector()
    for index, item in enumerate(data, start=1):
        entry = f"entry {index}"
        if not isinstance(item, dict):
            collector.error(entry, json.dumps(item), 'must be an object {"entity": {...}, "quotas": {...}}')
            continue
        unknown = sorted(set(item) - {"entity", "quotas"})
        for key in unknown:
            collector.error(f"{entry} {key}", json.dumps(item[key]),
                            'unknown key; an entry has "entity" and "quotas"')
        entity = _json_entity(collector, entry, item.get("entity"))
        quotas = item.get("quotas")
        if not isinstance(quotas, dict):
            collector.error(f"{entry} quotas", json.dumps(quotas), "must be an object of quota key -> number")
            continue
        if entity is not None:
            collector.add(entry, entity, quotas)
        else:
            for key, raw in quotas.items():
                collector.check_value(f"{entry} {key}", key, raw)
    return collector.result(source)


def _json_entity(collector: _Collector, entry: str, raw: object) -> QuotaEntity | None:
    prop = f"{entry} entity"
    if not isinstance(raw, dict):
        collector.error(prop, json.dumps(raw), 'must be an object with "user" and/or "client-id"')
        return None
    ok = True
    if "ip" in raw:
        collector.error(prop, json.dumps(raw), "ip entities are connection-rate quotas, not client quotas",
                        "remove this entry")
        return None
    for key in sorted(set(raw) - set(ENTITY_KEYS)):
        near = closest_name(key, ENTITY_KEYS)
        collector.error(f"{prop} {key}", json.dumps(raw[key]),
                        'unknown entity type; use "user" and/or "client-id"',
                        f"did you mean {near}?" if near else None)
        ok = False
    if not raw:
        collector.error(prop, "{}", "an entity needs a user, a client-id or both")
        return None
    parts: dict[str, Part] = {}
    for key in ENTITY_KEYS:
        if key not in raw:
            parts[key] = None
            continue
        name = raw[key]
        if not isinstance(name, str):
            collector.error(f"{prop} {key}", json.dumps(name), "must be a string name or \"<default>\"")
            ok = False
        elif name == "":
            collector.error(f"{prop} {key}", '""', f"an empty {key} is not supported (Kafka refuses it)",
                            'use "<default>" for the default entity')
            ok = False
        else:
            parts[key] = DEFAULT if name == DEFAULT_NAME else name
    if not ok or (parts.get("user") is None and parts.get("client-id") is None):
        return None
    return QuotaEntity(parts["user"], parts["client-id"])


def parse_describe_output(text: str, source: str = "") -> ClientQuotaConfig:
    """The text of `kafka-configs.sh --describe --entity-type users|clients`."""
    collector = _Collector()
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or stripped.startswith(_SKIPPED_LINES):
            continue
        where = f"line {number}"
        if _IP_LINE.match(stripped):
            collector.error(where, stripped, "ip entities are connection-rate quotas, not client quotas",
                            "describe users and clients only")
            continue
        match = _DESCRIBE_LINE.match(stripped)
        if match is None or not _well_formed(match):
            collector.error(where, stripped, "not a quota line of kafka-configs.sh --describe",
                            "expected: Quota configs for user-principal 'U', client-id 'C' are k=v, ...")
            continue
        user: Part = DEFAULT if match["user_default"] else match["user"]
        client: Part = DEFAULT if match["client_default"] else match["client"]
        if user == "" or client == "":
            collector.error(where, stripped, "an empty name is not supported (Kafka refuses it)")
            continue
        values: dict[str, Any] = {}
        entries = (match["entries"] or "").strip()
        for item in (e.strip() for e in entries.split(",")) if entries else ():
            key, sep, raw = item.partition("=")
            if not sep:
                collector.error(f"{where} {item}", "", "expected key=value")
                continue
            if key.strip() in values:
                collector.error(f"{where} {key.strip()}", raw.strip(), "duplicate key on one quota line")
                continue
            try:
                values[key.strip()] = double_value(key.strip(), raw)
            except ConfigError:
                values[key.strip()] = raw.strip()
        collector.add(where, QuotaEntity(user, client), values)
    return collector.result(source)


def _well_formed(match: re.Match[str]) -> bool:
    has_user = match["user"] is not None or match["user_default"] is not None
    has_client = match["client"] is not None or match["client_default"] is not None
    return (has_user or has_client) and (match["sep"] is not None) == (has_user and has_client)


def settings_from_properties(props: Mapping[str, str], **overrides: Any) -> ClientQuotaSettings:
    """Client quota settings from broker (or storage callback) properties; `overrides` win.

    `client.quota.callback.static.produce` (DOUBLE, default `Double.MAX_VALUE` = unlimited) must
    not be negative; window counts and sizes are INT at least 1.
    """
    errors: list[ConfigError] = []
    values: dict[str, Any] = {}
    ints = {WINDOW_NUM: ("window_num", 11), WINDOW_SIZE_SECONDS: ("window_size_seconds", 1),
            CONTROLLER_WINDOW_NUM: ("controller_window_num", 11),
            CONTROLLER_WINDOW_SIZE_SECONDS: ("controller_window_size_seconds", 1),
            METRICS_NUM_SAMPLES: ("metrics_num_samples", 2),
            METRICS_SAMPLE_WINDOW_MS: ("metrics_sample_window_ms", 30_000)}
    for key, (name, default) in ints.items():
        try:
            value = parse_long(props, key, default)
        except ConfigError as exc:
            errors.append(exc)
            continue
        if value is None or value < 1 or value > INT_MAX:
            errors.append(ConfigError(key, props.get(key), "must be an INT of at least 1"))
            continue
        values[name] = value
    try:
        values["quota_value_metric"] = parse_bool(props, VALUE_METRIC_ENABLE, False)
    except ConfigError as exc:
        errors.append(exc)
    try:
        static = parse_double(props, STATIC_PRODUCE, None)
        if static is not None and static < 0:
            errors.append(ConfigError(STATIC_PRODUCE, props.get(STATIC_PRODUCE), "must not be negative"))
        else:
            values["static_produce"] = None if static is None or static >= DOUBLE_MAX else static
    except ConfigError as exc:
        errors.append(exc)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ConfigErrors(errors)
    values.update({k: v for k, v in overrides.items() if v is not None})
    return ClientQuotaSettings(**values)


def load_settings(path: str | Path | None, **overrides: Any) -> ClientQuotaSettings:
    """`settings_from_properties` of a `.properties` file (or of nothing: Kafka's defaults)."""
    props = load_properties(path) if path is not None else {}
    return settings_from_properties(props, **overrides)


@dataclass(frozen=True)
class ClientsRunConfig:
    """The client quotas, and the broker properties (from the storage configuration, when given)."""

    quotas: ClientQuotaConfig
    broker_properties: Mapping[str, str]
    storage_given: bool

    def settings(self, storage_decisions: bool) -> ClientQuotaSettings:
        """The quota settings; the storage callback is installed when a storage configuration is given
        or storage decisions are at hand."""
        return settings_from_properties(self.broker_properties,
                                        storage_combined=self.storage_given or storage_decisions)
