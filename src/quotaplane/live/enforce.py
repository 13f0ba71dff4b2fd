"""Enforcing the storage throttle factor through Kafka's own client quotas (AlterClientQuotas).

spec: strimzi-cluster-wide-volume-quotas (Throttle Factor; the static quota callback's produce
quota), applied from outside the brokers: every round the service writes

- to the default user entity (`<default>`): its own produce quota, or when it has none the
  configured static produce quota (`client.quota.callback.static.produce`), times the factor;
- to every explicit entity that has a produce quota (its *base*, the value before any factor):
  base times the factor;
- to every excluded principal: its own base, or, when it has none and the default entity is
  throttled, Kafka's unlimited quota (`Long.MAX_VALUE` bytes/s), so it stays unthrottled;

never below 1 byte/s. Only the entities whose value changes are altered. At factor 1 every entity
gets its base back exactly: an entity that had no produce quota gets none again.

The bases are kept in the service's state (`BaseQuotas`), so a restarted service never compounds
the factor (base × f × f); a value found on the cluster that is not the one the service wrote last
is an operator's change and becomes the entity's new base.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from quotaplane.core.javamath import LONG_MAX
from quotaplane.live.admin import QuotaAlteration, QuotaEntity

PRODUCE = "producer_byte_rate"
DEFAULT = "<default>"
DEFAULT_USER: QuotaEntity = (DEFAULT, None)
UNLIMITED = float(LONG_MAX)  # Kafka's "no quota" for a byte rate (`QuotaConfig` default Long.MAX_VALUE)


class ClusterQuotas(Protocol):
    """The client quota calls of `quotaplane.live.admin.ClusterAdmin` (a replay holds them in memory)."""

    def client_quotas(self) -> dict[QuotaEntity, dict[str, float]]: ...

    def alter_client_quotas(self, alterations: Sequence[QuotaAlteration]
                            ) -> dict[QuotaEntity, str | None]: ...


def entity_key(entity: QuotaEntity) -> str:
    """A stable text form of an entity for the state file and metric labels."""
    user, client = entity
    return f"user={'' if user is None else user},client-id={'' if client is None else client}"


def parse_entity_key(key: str) -> QuotaEntity:
    user_part, _, client_part = key.partition(",client-id=")
    user = user_part[len("user="):]
    return (user or None, client_part or None)


@dataclass
class BaseQuotas:
    """The unscaled produce quota of every entity the service manages (None: the entity had none),
    and what the service last wrote to each (to tell its own writes from an operator's)."""

    base: dict[QuotaEntity, float | None] = field(default_factory=dict)
    written: dict[QuotaEntity, float | None] = field(default_factory=dict)

    def observe(self, current: Mapping[QuotaEntity, Mapping[str, float]]) -> None:
        """Take the cluster's produce quotas: a value the service did not write (an entity it never
        altered, or one an operator changed or removed since) is that entity's base."""
        for entity in set(current) | set(self.base) | set(self.written):
            value = current.get(entity, {}).get(PRODUCE)
            if entity in self.written:
                if _same(self.written[entity], value):
                    continue  # the service's own value
                self.written.pop(entity)
            if value is not None or entity in self.base:
                self.base[entity] = value

    def wrote(self, alteration: QuotaAlteration) -> None:
        """Record a successful alteration."""
        self.written[alteration.entity] = alteration.value

    def as_json(self) -> dict[str, dict[str, float | None]]:
        return {"base": {entity_key(e): v for e, v in self.base.items()},
                "written": {entity_key(e): v for e, v in self.written.items()}}

    @classmethod
    def from_json(cls, data: Mapping[str, Mapping[str, float | None]]) -> BaseQuotas:
        return cls({parse_entity_key(k): v for k, v in data.get("base", {}).items()},
                   {parse_entity_key(k): v for k, v in data.get("written", {}).items()})


def _same(a: float | None, b: float | None) -> bool:
    return a == b if a is not None and b is not None else a is None and b is None


def scaled(base: float, factor: float) -> float:
    """base × factor, never below 1 byte/s (spec: an effective limit never goes below 1)."""
    return max(1.0, base * factor)


def targets(bases: BaseQuotas, factor: float, static_produce: float | None,
            excluded_users: Iterable[str]) -> dict[QuotaEntity, float | None]:
    """The produce quota every managed entity should have under `factor` (module docstring)."""
    excluded = set(excluded_users)
    out: dict[QuotaEntity, float | None] = {}
    for entity, base in bases.base.items():
        user = entity[0]
        if base is None or user in excluded:
            out[entity] = base
        else:
            out[entity] = base if factor >= 1.0 else scaled(base, factor)
    own = bases.base.get(DEFAULT_USER)
    if static_produce is not None or own is not None:
        base = own if own is not None else static_produce
        assert base is not None
        out[DEFAULT_USER] = own if factor >= 1.0 else scaled(base, factor)
    default_throttled = out.get(DEFAULT_USER) is not None and factor < 1.0
    for user in sorted(excluded):
        entity = (user, None)
        if bases.base.get(entity) is None:
            out[entity] = UNLIMITED if default_throttled else None
    return out


def plan(bases: BaseQuotas, current: Mapping[QuotaEntity, Mapping[str, float]], factor: float,
         static_produce: float | None, excluded_users: Iterable[str]) -> list[QuotaAlteration]:
    """The alterations that bring the cluster to `targets`: only entities whose value changes."""
    out = []
    for entity, value in sorted(targets(bases, factor, static_produce, excluded_users).items(),
                                key=lambda item: entity_key(item[0])):
        if not _same(current.get(entity, {}).get(PRODUCE), value):
            out.append(QuotaAlteration(entity, PRODUCE, value))
    return out


@dataclass
class Enforced:
    """What one round's enforcement did: the alterations it made (or would make, dry run), those
    that failed (`"<entity>: <reason>"`) and the produce quota every managed entity should have."""

    changes: list[QuotaAlteration] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    targets: dict[QuotaEntity, float | None] = field(default_factory=dict)


class Enforcer:
    """Brings the cluster's client quotas to a throttle factor (module docstring), remembering the
    bases in `bases` (the service's state)."""

    def __init__(self, quotas: ClusterQuotas, bases: BaseQuotas, static_produce: float | None,
                 excluded_users: Iterable[str], dry_run: bool = False) -> None:
        self.quotas = quotas
        self.bases = bases
        self.static_produce = static_produce
        self.excluded = sorted(excluded_users)
        self.dry_run = dry_run

    def apply(self, factor: float) -> Enforced:
        """One round: read the quotas, alter what differs. A failed call is a failure of the round's
        enforcement (the next round alters again: the cluster still differs), never an exception."""
        from quotaplane.live.admin import AdminError

        try:
            current = self.quotas.client_quotas()
        except AdminError as exc:
            return Enforced(failed=[exc.reason])
        self.bases.observe(current)
        done = Enforced(targets=targets(self.bases, factor, self.static_produce, self.excluded))
        done.changes = plan(self.bases, current, factor, self.static_produce, self.excluded)
        if not done.changes or self.dry_run:
            return done
        try:
            results = self.quotas.alter_client_quotas(done.changes)
        except AdminError as exc:
            results = {a.entity: exc.reason for a in done.changes}
        for change in done.changes:
            error = results.get(change.entity, "NO_ANSWER")
            if error is None:
                self.bases.wrote(change)
            else:
                done.failed.append(f"{entity_key(change.entity)}: {error}")
        return done
