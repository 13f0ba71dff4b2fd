"""Kafka's default quota callback: metric tags (who shares a quota) and the 8-level precedence."""

from __future__ import annotations

import pytest

from quotaplane.clients.engine.entities import DEFAULT, ClientQuotaConfig, QuotaEntity, level_entity
from quotaplane.clients.engine.resolution import QuotaResolver, Tags

P = "producer_byte_rate"

ALL_LEVELS = {
    QuotaEntity("alice", "app"): 1.0,
    QuotaEntity("alice", DEFAULT): 2.0,
    QuotaEntity("alice", None): 3.0,
    QuotaEntity(DEFAULT, "app"): 4.0,
    QuotaEntity(DEFAULT, DEFAULT): 5.0,
    QuotaEntity(DEFAULT, None): 6.0,
    QuotaEntity(None, "app"): 7.0,
    QuotaEntity(None, DEFAULT): 8.0,
}


def resolver(entities: dict[QuotaEntity, float], key: str = P) -> QuotaResolver:
    return QuotaResolver(ClientQuotaConfig({e: {key: v} for e, v in entities.items()}))


@pytest.mark.parametrize("level", range(1, 9))
def test_each_level_wins_over_every_later_one(level: int) -> None:
    """With levels `level`..8 configured, the limit comes from `level` (values equal the level)."""
    entities = {e: v for e, v in ALL_LEVELS.items() if v >= level}
    _, resolved = resolver(entities).resolve("produce", "alice", "app")
    assert (resolved.limit, resolved.level) == (float(level), level)


@pytest.mark.parametrize(("entity", "tags"), [
    (QuotaEntity(None, "app"), Tags("", "app")),            # client-id quotas only
    (QuotaEntity(None, DEFAULT), Tags("", "app")),
    (QuotaEntity("bob", None), Tags("alice", "")),          # user quotas only (even another user's)
    (QuotaEntity(DEFAULT, None), Tags("alice", "")),
    (QuotaEntity("bob", "x"), Tags("alice", "app")),        # user+client-id quotas only
    (QuotaEntity(DEFAULT, DEFAULT), Tags("alice", "app")),
])
def test_tags_with_one_kind_of_entity(entity: QuotaEntity, tags: Tags) -> None:
    assert resolver({entity: 10.0}).metric_tags("produce", "alice", "app") == tags


def test_no_quota_tags_by_client_id_and_is_not_recorded() -> None:
    r = resolver({})
    assert r.metric_tags("produce", "alice", "app") == Tags("", "app")
    assert not r.enabled("produce")
    assert r.limit("produce", Tags("", "app")).limit is None


def test_single_kind_limit_may_be_unlimited_for_others() -> None:
    r = resolver({QuotaEntity("bob", None): 10.0})
    assert r.resolve("produce", "alice", "app")[1].limit is None
    assert r.resolve("produce", "bob", "app")[1].limit == 10.0


@pytest.mark.parametrize(("entities", "tags", "limit", "level"), [
    # several kinds: the first existing level of 1-6 decides the tags
    ({QuotaEntity("alice", None): 3.0, QuotaEntity(None, "app"): 7.0}, Tags("alice", ""), 3.0, 3),
    ({QuotaEntity("bob", None): 3.0, QuotaEntity(None, "app"): 7.0}, Tags("", "app"), 7.0, 7),
    ({QuotaEntity(DEFAULT, "app"): 4.0, QuotaEntity("alice", None): 3.0}, Tags("alice", ""), 3.0, 3),
    ({QuotaEntity(DEFAULT, "app"): 4.0, QuotaEntity("bob", None): 3.0}, Tags("alice", "app"), 4.0, 4),
    ({QuotaEntity(DEFAULT, None): 6.0, QuotaEntity(None, DEFAULT): 8.0}, Tags("alice", ""), 6.0, 6),
    ({QuotaEntity("alice", DEFAULT): 2.0, QuotaEntity(None, "app"): 7.0}, Tags("alice", "app"), 2.0, 2),
    # tags (user, client) search only their tier: (bob) is not in it
    ({QuotaEntity(DEFAULT, "app"): 4.0, QuotaEntity("bob", None): 3.0, QuotaEntity(None, "zz"): 1.0},
     Tags("alice", "app"), 4.0, 4),
])
def test_multi_level_walk(entities, tags, limit, level) -> None:
    r = resolver(entities)
    got_tags, resolved = r.resolve("produce", "alice", "app")
    assert got_tags == tags
    assert (resolved.limit, resolved.level) == (limit, level)


def test_quota_types_resolve_independently() -> None:
    config = ClientQuotaConfig({QuotaEntity("alice", None): {P: 10.0},
                                QuotaEntity(None, "app"): {"consumer_byte_rate": 20.0}})
    r = QuotaResolver(config)
    assert r.resolve("produce", "alice", "app") == (Tags("alice", ""), r.limit("produce", Tags("alice", "")))
    assert r.metric_tags("fetch", "alice", "app") == Tags("", "app")
    assert r.limit("fetch", Tags("", "app")).limit == 20.0
    assert not r.enabled("request")


def test_a_user_named_default_is_not_the_default_entity() -> None:
    r = resolver({QuotaEntity(DEFAULT, None): 6.0, QuotaEntity("<default>", None): 9.0})
    assert r.resolve("produce", "<default>", "x")[1].limit == 9.0
    assert r.resolve("produce", "carol", "x")[1].limit == 6.0


def test_empty_client_id_with_user_client_quotas_finds_nothing() -> None:
    r = resolver({QuotaEntity(DEFAULT, DEFAULT): 5.0})
    tags, resolved = r.resolve("produce", "alice", "")
    assert tags == Tags("alice", "") and resolved.limit is None


def test_level_entity_paths() -> None:
    assert level_entity(2, "alice", "app").path == "/config/users/alice/clients/<default>"
    assert level_entity(7, "alice", "app").path == "/config/clients/app"
