"""The admin API's JSON answers checked and turned into `model` values (or a `MALFORMED_ANSWER`).

Field names are Pulsar's (`TopicStatsImpl`, `SubscriptionStatsImpl`, `PersistentTopicInternalStats`,
`BacklogQuotaImpl`). Every check names the field, the value and the rule, e.g.
`subscriptions.sub.msgBacklog="x": must be a whole number`. A stats answer without the PIP-323 fields
comes from a broker older than Pulsar 3.2, and is refused as such.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from quotaplane.backlog.config import (
    BROKER_KEYS,
    DESTINATION_STORAGE,
    MESSAGE_AGE,
    RETENTION_POLICIES,
    Quota,
    QuotaSet,
)
from quotaplane.backlog.names import is_topic_name, namespace_of
from quotaplane.live.pulsar.model import Ledger, Position, PulsarError, SubscriptionBacklog, TopicBacklog

PIP_323_FIELDS = ("backlogQuotaLimitSize", "backlogQuotaLimitTime", "oldestBacklogMessageAgeSeconds")


class Malformed(Exception):
    """An answer field that breaks its rule (caught here, returned as a `PulsarError`)."""


def _show(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _whole(obj: Mapping[str, Any], key: str, where: str, default: int | None = None) -> int:
    if key not in obj or obj[key] is None:
        if default is not None:
            return default
        raise Malformed(f"{where}{key}: missing")
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise Malformed(f"{where}{key}={_show(value)}: must be a whole number")
    return value


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise Malformed(f"{where}={_show(value)}: must be a JSON object")
    return value


def _malformed(where: str, exc: Malformed) -> PulsarError:
    return PulsarError("MALFORMED_ANSWER", where, str(exc))


def topic_list(answer: Any, namespace: str, where: str) -> list[str] | PulsarError:
    """The topics of a namespace listing: `persistent://` names in that namespace, sorted."""
    if not isinstance(answer, list) or not all(isinstance(t, str) for t in answer):
        return PulsarError("MALFORMED_ANSWER", where, f"topics={_show(answer)}: must be a JSON list of names")
    bad = [t for t in answer if not is_topic_name(t) or namespace_of(t) != namespace]
    if bad:
        return PulsarError("MALFORMED_ANSWER", where,
                           f"topic {_show(bad[0])}: must be persistent://{namespace}/<name>")
    return sorted(set(answer))


def quota_set(answer: Any, where: str) -> QuotaSet | PulsarError:
    """A `backlogQuotaMap` (`{"destination_storage": {"limitSize", "limitTime", "policy"}, ...}`):
    the size quota's limit is `limitSize` (the deprecated `limit` when absent), the time quota's
    `limitTime`."""
    try:
        entries = _object(answer, "backlogQuotaMap")
        quotas: dict[str, Quota] = {}
        for quota_type, entry in entries.items():
            if quota_type not in (DESTINATION_STORAGE, MESSAGE_AGE):
                raise Malformed(f"backlogQuotaMap.{quota_type}: unknown backlog quota type")
            prefix = f"backlogQuotaMap.{quota_type}."
            entry = _object(entry, prefix[:-1])
            if quota_type == DESTINATION_STORAGE:
                key = "limitSize" if entry.get("limitSize") is not None else "limit"
            else:
                key = "limitTime"
            limit = _whole(entry, key, prefix)
            policy = entry.get("policy")
            if policy not in RETENTION_POLICIES:
                raise Malformed(f"{prefix}policy={_show(policy)}: must be one of "
                                f"{', '.join(RETENTION_POLICIES)}")
            quotas[quota_type] = Quota(limit, policy)
    except Malformed as exc:
        return _malformed(where, exc)
    return QuotaSet(quotas.get(DESTINATION_STORAGE), quotas.get(MESSAGE_AGE))


def broker_settings(answer: Any, where: str = "broker configuration") -> dict[str, str] | PulsarError:
    """The backlog-quota keys of the broker's runtime configuration (all values are strings there)."""
    if not isinstance(answer, dict):
        return PulsarError("MALFORMED_ANSWER", where, f"configuration={_show(answer)}: must be a JSON object")
    return {key: str(answer[key]) for key in BROKER_KEYS if answer.get(key) is not None}


def _position(text: Any, where: str) -> Position:
    if isinstance(text, str):
        ledger, _, entry = text.partition(":")
        try:
            return Position(int(ledger), int(entry))
        except ValueError:
            pass
    raise Malformed(f"{where}={_show(text)}: must be a position ledger:entry")


def cursor_positions(answer: Any, where: str) -> dict[str, Position] | PulsarError:
    """Each cursor's mark-delete position of an `internalStats` answer (the live positions: the
    metadata store's copy is flushed only now and then)."""
    try:
        obj = _object(answer, "internalStats")
        cursors = {}
        for name, raw in _object(obj.get("cursors") or {}, "cursors").items():
            cursor = _object(raw, f"cursors.{name}")
            cursors[name] = _position(cursor.get("markDeletePosition"), f"cursors.{name}.markDeletePosition")
    except Malformed as exc:
        return _malformed(where, exc)
    return cursors


def ledgers(answer: Any, where: str) -> list[Ledger] | PulsarError:
    """The ledgers of an `internal-info` answer (the managed ledger's metadata, `ManagedLedgerInfo`),
    by id. A closed ledger has its entries, size and close `timestamp`; the last ledger is the one
    being written (open: Pulsar's estimate has no age for it), and so is one without entries."""
    try:
        obj = _object(answer, "internal-info")
        raw_ledgers = obj.get("ledgers") or []
        if not isinstance(raw_ledgers, list):
            raise Malformed(f"ledgers={_show(raw_ledgers)}: must be a JSON list")
        out = []
        for i, raw in enumerate(raw_ledgers):
            info = _object(raw, f"ledgers[{i}]")
            prefix = f"ledgers[{i}]."
            closed = info.get("entries") is not None
            close = _whole(info, "timestamp", prefix, default=0) if closed else 0
            out.append(Ledger(_whole(info, "ledgerId", prefix), _whole(info, "entries", prefix, default=0),
                              _whole(info, "size", prefix, default=0), close if close > 0 else None))
    except Malformed as exc:
        return _malformed(where, exc)
    out.sort(key=lambda ledger: ledger.ledger_id)
    if out and out[-1].close_ts_ms is not None:
        out[-1] = Ledger(out[-1].ledger_id, out[-1].entries, out[-1].size_bytes, None)
    return out


def oldest_ledger(ledgers: list[Ledger], mark_delete: Position) -> Ledger | None:
    """The ledger holding the first entry after `mark_delete` (upstream
    `PersistentTopic.estimatedTimeBasedBacklogQuotaCheck`): the mark-delete ledger unless its last entry
    is acknowledged (or it is gone), else the next ledger."""
    for ledger in ledgers:
        if ledger.ledger_id < mark_delete.ledger:
            continue
        if ledger.ledger_id == mark_delete.ledger:
            if ledger.close_ts_ms is None or mark_delete.entry + 1 < ledger.entries:
                return ledger
            continue
        return ledger
    return None


def topic_backlog(answer: Any, topic: str, partitioned_topic: str | None, observed_ms: int,
                  ledgers: list[Ledger] | None = None, cursors: Mapping[str, Position] | None = None
                  ) -> TopicBacklog | PulsarError:
    """A topic's stats answer as a `TopicBacklog`; with its internal stats, each subscription's oldest
    unacknowledged entry's ledger close time."""
    where = f"topic {topic}"
    try:
        obj = _object(answer, "stats")
        missing = [f for f in PIP_323_FIELDS if f not in obj]
        if missing:
            raise Malformed(f"{missing[0]}: missing (the broker predates PIP-323, Pulsar 3.2)")
        name = obj.get("oldestBacklogMessageSubscriptionName")
        if name is not None and not isinstance(name, str):
            raise Malformed(f"oldestBacklogMessageSubscriptionName={_show(name)}: must be a string or null")
        publishers = obj.get("publishers") or []
        if not isinstance(publishers, list):
            raise Malformed(f"publishers={_show(publishers)}: must be a JSON list")
        subscriptions = []
        for sub_name, raw in sorted(_object(obj.get("subscriptions") or {}, "subscriptions").items()):
            prefix = f"subscriptions.{sub_name}."
            sub = _object(raw, prefix[:-1])
            earliest = _whole(sub, "earliestMsgPublishTimeInBacklog", prefix, default=-1)
            durable = sub.get("isDurable", True)
            if not isinstance(durable, bool):
                raise Malformed(f"{prefix}isDurable={_show(durable)}: must be true or false")
            close = None
            if ledgers is not None and cursors is not None and sub_name in cursors:
                held_in = oldest_ledger(ledgers, cursors[sub_name])
                close = held_in.close_ts_ms if held_in is not None else None
            subscriptions.append(SubscriptionBacklog(
                name=sub_name, entries=_whole(sub, "msgBacklog", prefix),
                size_bytes=_whole(sub, "backlogSize", prefix),
                oldest_publish_ts_ms=earliest if earliest > 0 else None, durable=durable,
                oldest_ledger_close_ts_ms=close))
        return TopicBacklog(
            topic=topic, partitioned_topic=partitioned_topic, observed_ms=observed_ms,
            backlog_size_bytes=_whole(obj, "backlogSize", ""),
            limit_size=_whole(obj, "backlogQuotaLimitSize", ""),
            limit_time=_whole(obj, "backlogQuotaLimitTime", ""),
            oldest_age_seconds=_whole(obj, "oldestBacklogMessageAgeSeconds", ""), oldest_subscription=name,
            producers=len(publishers), subscriptions=tuple(subscriptions))
    except Malformed as exc:
        return _malformed(where, exc)
