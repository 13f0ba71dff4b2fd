"""Enforcement through client quotas: targets under a factor, only changed entities altered, bases
restored exactly, operators' changes taken as the new base, never compounded across a restart."""

from __future__ import annotations

from quotaplane.live.admin import QuotaAlteration
from quotaplane.live.enforce import (
    DEFAULT_USER,
    PRODUCE,
    UNLIMITED,
    BaseQuotas,
    entity_key,
    parse_entity_key,
    plan,
    targets,
)

ALICE = ("alice", None)
APP = (None, "app")
ADMIN = ("admin", None)


def apply(current: dict, alterations: list[QuotaAlteration]) -> dict:
    out = {e: dict(q) for e, q in current.items()}
    for a in alterations:
        entry = out.setdefault(a.entity, {})
        if a.value is None:
            entry.pop(a.key, None)
        else:
            entry[a.key] = a.value
    return {e: q for e, q in out.items() if q}


def test_entity_keys_round_trip() -> None:
    for entity in (DEFAULT_USER, ALICE, APP, ("u", "c"), ("<default>", "<default>")):
        assert parse_entity_key(entity_key(entity)) == entity


def test_targets_scale_every_produce_quota_and_the_static_default() -> None:
    bases = BaseQuotas({ALICE: 1000.0, APP: 10.0, ("bob", None): None})
    got = targets(bases, 0.5, 4000.0, [])
    assert got == {ALICE: 500.0, APP: 5.0, ("bob", None): None, DEFAULT_USER: 2000.0}
    assert targets(bases, 0.0, 4000.0, [])[APP] == 1.0  # never below 1 byte/s
    assert targets(bases, 1.0, 4000.0, []) == {ALICE: 1000.0, APP: 10.0, ("bob", None): None,
                                               DEFAULT_USER: None}


def test_the_default_entity_scales_its_own_quota_when_it_has_one() -> None:
    bases = BaseQuotas({DEFAULT_USER: 2000.0})
    assert targets(bases, 0.5, 10_000.0, [])[DEFAULT_USER] == 1000.0
    assert targets(bases, 1.0, 10_000.0, [])[DEFAULT_USER] == 2000.0


def test_excluded_principals_stay_unthrottled() -> None:
    bases = BaseQuotas({ALICE: 1000.0})
    got = targets(bases, 0.25, 4000.0, ["alice", "admin"])
    assert got[ALICE] == 1000.0 and got[ADMIN] == UNLIMITED and got[DEFAULT_USER] == 1000.0
    assert targets(bases, 1.0, 4000.0, ["alice", "admin"])[ADMIN] is None


def test_only_changed_entities_are_altered_and_factor_one_restores_exactly() -> None:
    bases = BaseQuotas()
    current = {ALICE: {PRODUCE: 1000.0, "consumer_byte_rate": 7.0}, APP: {"request_percentage": 5.0}}
    bases.observe(current)
    assert bases.base == {ALICE: 1000.0}
    throttle = plan(bases, current, 0.5, 4000.0, [])
    assert throttle == [QuotaAlteration(DEFAULT_USER, PRODUCE, 2000.0),
                        QuotaAlteration(ALICE, PRODUCE, 500.0)]
    for a in throttle:
        bases.wrote(a)
    current = apply(current, throttle)
    bases.observe(current)
    assert plan(bases, current, 0.5, 4000.0, []) == []  # nothing changes: nothing is altered
    restore = plan(bases, current, 1.0, 4000.0, [])
    assert restore == [QuotaAlteration(DEFAULT_USER, PRODUCE, None), QuotaAlteration(ALICE, PRODUCE, 1000.0)]
    for a in restore:
        bases.wrote(a)
    assert apply(current, restore) == {ALICE: {PRODUCE: 1000.0, "consumer_byte_rate": 7.0},
                                       APP: {"request_percentage": 5.0}}


def test_a_restart_never_compounds_and_an_operator_change_becomes_the_base() -> None:
    bases = BaseQuotas()
    current = {ALICE: {PRODUCE: 1000.0}}
    bases.observe(current)
    for a in plan(bases, current, 0.5, None, []):
        bases.wrote(a)
    current = {ALICE: {PRODUCE: 500.0}}
    restarted = BaseQuotas.from_json(bases.as_json())  # the state file across a restart
    restarted.observe(current)
    assert plan(restarted, current, 0.5, None, []) == []  # not 250: base x f, never base x f x f
    current = {ALICE: {PRODUCE: 800.0}}  # an operator sets alice's quota while throttled
    restarted.observe(current)
    assert restarted.base[ALICE] == 800.0
    assert plan(restarted, current, 0.5, None, []) == [QuotaAlteration(ALICE, PRODUCE, 400.0)]
    restarted.observe({})  # and then removes it
    assert plan(restarted, {}, 0.5, None, []) == []
