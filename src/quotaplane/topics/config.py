"""Configuration of topic bytes-in quotas: the broker total, per-topic thresholds and their changes.

spec: kafka-topic-bytes-in-quota (Low level design, 1). A `.properties` file:

    total.bytes.in.per.sec.threshold=10000000          # required, LONG >= 0, bytes/s per broker
    message.max.bytes=1048588                           # optional, INT >= 0 (Kafka's default)
    topic.orders.bytes.in.per.sec.threshold=4000000     # explicit threshold of topic `orders`
    topic.orders.bytes.in.per.sec.threshold@1767225600000=6000000   # a change at that epoch ms
    topic.orders.bytes.in.per.sec.threshold@1767229200000=          # explicit threshold removed
    quotaplane.topics.interval.ms=60000                 # optional, the report interval

Plain topic keys are in force from the start; `@<epoch ms>` keys are threshold changes that a backtest
replays in time order (file order among equal times). A change is rejected when the explicit
thresholds would then sum above the broker total: a rejected plain key is a configuration error (there
is nothing to fall back to), a rejected timestamped change is kept out of force and reported, the way a
broker refuses the config change and keeps the previous value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from quotaplane.core.errors import ConfigError, ConfigErrors
from quotaplane.core.javamath import INT_MAX, LONG_MAX, LONG_MIN
from quotaplane.core.properties import closest_name, load_properties
from quotaplane.topics.records import TOPIC_NAME_RULE, is_legal_topic_name

TOTAL_THRESHOLD = "total.bytes.in.per.sec.threshold"
MESSAGE_MAX_BYTES = "message.max.bytes"
INTERVAL_MS = "quotaplane.topics.interval.ms"
TOPIC_PREFIX = "topic."
TOPIC_SUFFIX = ".bytes.in.per.sec.threshold"
TOPIC_KEY_PATTERN = "topic.<name>.bytes.in.per.sec.threshold[@<epoch ms>]"

# Kafka's default `message.max.bytes`: 1 MiB plus the 12-byte log overhead of a record batch.
DEFAULT_MESSAGE_MAX_BYTES = 1024 * 1024 + 12
DEFAULT_INTERVAL_MS = 60_000

KNOWN_KEYS = (TOTAL_THRESHOLD, MESSAGE_MAX_BYTES, INTERVAL_MS)
_TS = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class ThresholdChange:
    """One topic threshold setting: a plain key (`ts_ms` None, in force from the start) or a change.

    `threshold` None removes the explicit threshold (the topic then gets the default share).
    `explicit_sum` is the sum of the explicit thresholds after the change, or the sum it would have
    made when `accepted` is False; `error` then says why it was rejected. `explicit_count` is the
    number of explicit thresholds after an accepted change, `previous` the topic's explicit threshold
    before it: with them, the schedule of thresholds in force is derived once, here.
    """

    key: str
    topic: str
    ts_ms: int | None
    threshold: int | None
    position: int
    accepted: bool = True
    explicit_sum: int = 0
    error: str | None = None
    explicit_count: int = 0
    previous: int | None = None


@dataclass(frozen=True)
class TopicQuotaConfig:
    """The validated configuration (spec: Low level design, 1).

    `changes` holds every topic threshold setting in the order it takes effect (plain keys first, in
    file order, then timestamped changes by time, file order among equal times), rejected ones
    included with their error.
    """

    total_threshold: int
    message_max_bytes: int = DEFAULT_MESSAGE_MAX_BYTES
    interval_ms: int = DEFAULT_INTERVAL_MS
    changes: tuple[ThresholdChange, ...] = ()

    @property
    def accepted_changes(self) -> tuple[ThresholdChange, ...]:
        return tuple(c for c in self.changes if c.accepted)

    @property
    def rejected_changes(self) -> tuple[ThresholdChange, ...]:
        return tuple(c for c in self.changes if not c.accepted)

    @property
    def initial_thresholds(self) -> dict[str, int]:
        """The explicit thresholds in force from the start (the plain keys)."""
        return {c.topic: c.threshold for c in self.changes
                if c.ts_ms is None and c.accepted and c.threshold is not None}


def threshold_key(topic: str, ts_ms: int | None = None) -> str:
    """The property key of a topic's threshold (with `@ts` for a timestamped change)."""
    key = f"{TOPIC_PREFIX}{topic}{TOPIC_SUFFIX}"
    return key if ts_ms is None else f"{key}@{ts_ms}"


def load_topics_config(path: str | Path) -> TopicQuotaConfig:
    """Load and validate a topic bytes-in quota `.properties` file."""
    return parse_topics_config(load_properties(path))


def parse_topics_config(props: Mapping[str, str]) -> TopicQuotaConfig:
    """Validate properties; every problem found is reported at once (`ConfigErrors`)."""
    errors: list[ConfigError] = []
    settings: list[ThresholdChange] = []
    for position, (key, raw) in enumerate(props.items()):
        if key in KNOWN_KEYS:
            continue
        try:
            setting = _parse_topic_key(key, raw, position)
        except ConfigError as exc:
            errors.append(exc)
            continue
        if setting is None:
            hint = closest_name(key, KNOWN_KEYS)
            errors.append(ConfigError(key, raw, "unknown property",
                                      f"did you mean {hint}?" if hint else f"known: {', '.join(KNOWN_KEYS)}, "
                                      f"{TOPIC_KEY_PATTERN}"))
            continue
        settings.append(setting)

    total = _long(props, TOTAL_THRESHOLD, None, 0, LONG_MAX, errors)
    if total is None and TOTAL_THRESHOLD not in props:
        errors.append(ConfigError(TOTAL_THRESHOLD, "", "missing required property",
                                  "the broker-wide bytes-in threshold in bytes/s"))
    max_bytes = _long(props, MESSAGE_MAX_BYTES, DEFAULT_MESSAGE_MAX_BYTES, 0, INT_MAX, errors)
    interval = _long(props, INTERVAL_MS, DEFAULT_INTERVAL_MS, 1, LONG_MAX, errors)
    if total is not None:
        scheduled = schedule_changes(total, settings)
        errors += [change_error(c) for c in scheduled if c.ts_ms is None and not c.accepted]
    if errors:
        raise ConfigErrors(errors)
    assert total is not None and max_bytes is not None and interval is not None
    return TopicQuotaConfig(total, max_bytes, interval, scheduled)


def schedule_changes(total: int, settings: Iterable[ThresholdChange]) -> tuple[ThresholdChange, ...]:
    """Put the settings in effect order and accept or reject each (spec: Low level design, 1).

    A setting is rejected when, applied on top of the accepted ones before it, the explicit thresholds
    would sum above `total` (equal is allowed). A rejected setting changes nothing.
    """
    ordered = sorted(settings, key=lambda c: (c.ts_ms is not None, c.ts_ms or 0, c.position))
    explicit: dict[str, int] = {}
    out: list[ThresholdChange] = []
    for change in ordered:
        others = sum(v for t, v in explicit.items() if t != change.topic)
        new_sum = others + (change.threshold or 0)
        if new_sum > total:
            rule = (f"rejected: topic {change.topic} with the new value {change.threshold} makes the "
                    f"explicit topic thresholds sum to {new_sum}, above {TOTAL_THRESHOLD}={total} (the other "
                    f"explicit thresholds sum to {others})")
            out.append(replace(change, accepted=False, explicit_sum=new_sum, error=rule))
            continue
        previous = explicit.get(change.topic)
        if change.threshold is None:
            explicit.pop(change.topic, None)
        else:
            explicit[change.topic] = change.threshold
        out.append(replace(change, accepted=True, explicit_sum=new_sum, error=None,
                           explicit_count=len(explicit), previous=previous))
    return tuple(out)


def change_error(change: ThresholdChange) -> ConfigError:
    """The error of a rejected setting, as `key=value: rejected: ...`."""
    return ConfigError(change.key, _text(change.threshold), change.error or "accepted")


def _parse_topic_key(key: str, raw: str, position: int) -> ThresholdChange | None:
    """A `topic.<name>.bytes.in.per.sec.threshold[@ts]` setting, or None when `key` is not one."""
    name, at, ts_text = key.partition("@")
    if not name.startswith(TOPIC_PREFIX):
        if at:
            raise ConfigError(key, raw, "only topic thresholds can have timed changes",
                              f"use {TOPIC_KEY_PATTERN}")
        return None
    if not name.endswith(TOPIC_SUFFIX) or len(name) <= len(TOPIC_PREFIX) + len(TOPIC_SUFFIX):
        raise ConfigError(key, raw, "unknown topic property", f"the form is {TOPIC_KEY_PATTERN}")
    topic = name[len(TOPIC_PREFIX):-len(TOPIC_SUFFIX)]
    if not is_legal_topic_name(topic):
        raise ConfigError(key, raw, f"illegal topic name {topic!r}: {TOPIC_NAME_RULE}")
    ts_ms: int | None = None
    if at:
        if not _TS.fullmatch(ts_text.strip()):
            raise ConfigError(key, raw, f"the change time {ts_text!r} after '@' must be epoch milliseconds")
        ts_ms = int(ts_text.strip())
        if not LONG_MIN <= ts_ms <= LONG_MAX:
            raise ConfigError(key, raw, f"the change time {ts_ms} is out of the range of a LONG")
    text = raw.strip()
    if text == "" and ts_ms is not None:
        return ThresholdChange(key, topic, ts_ms, None, position)
    threshold = _to_long(key, raw, 0, LONG_MAX)
    return ThresholdChange(key, topic, ts_ms, threshold, position)


def _long(props: Mapping[str, str], key: str, default: int | None, low: int, high: int,
          errors: list[ConfigError]) -> int | None:
    raw = props.get(key)
    if raw is None:
        return default
    try:
        return _to_long(key, raw, low, high)
    except ConfigError as exc:
        errors.append(exc)
        return None


def _to_long(key: str, raw: str, low: int, high: int) -> int:
    text = raw.strip()
    if not _TS.fullmatch(text):
        raise ConfigError(key, raw, "must be a whole number")
    value = int(text)
    if value < low:
        raise ConfigError(key, raw, f"must be at least {low}")
    if value > high:
        raise ConfigError(key, raw, f"must be at most {high}")
    return value


def _text(value: int | None) -> str:
    return "" if value is None else str(value)
