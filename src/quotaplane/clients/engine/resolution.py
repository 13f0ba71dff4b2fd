"""Which quota a request gets: its metric tags (who shares the quota), then the limit and its level.

spec: Kafka `ClientQuotaManager.DefaultQuotaCallback`. Each quota type has its
own quota manager, so the entities that count for a type are those that set its key.

1. Tags. With one kind of entity configured (`quotaTypesEnabled` is 1, 2 or 4), or none, the tags
   follow the kind: client-id only or none -> ("", client), user only -> (user, ""), user+client ->
   (user, client). With several kinds, the first level that exists decides: 1, 2 -> (user, client);
   3 -> (user, ""); 4, 5 -> (user, client); 6 -> (user, ""); none of these -> ("", client).
2. Limit. Only the tier the tags name is searched: both tags -> levels 1, 2, 4, 5; user only ->
   3, 6; client only -> 7, 8; nothing found -> unlimited.

Requests that share tags share one rate: that is the sharing group of a quota.
"""

from __future__ import annotations

from dataclasses import dataclass

from quotaplane.clients.engine.entities import (
    CLIENT_ID_QUOTA_ENABLED,
    USER_CLIENT_ID_QUOTA_ENABLED,
    USER_QUOTA_ENABLED,
    ClientQuotaConfig,
    QuotaEntity,
    level_entity,
)
from quotaplane.clients.engine.quota_types import CONFIG_KEY, QUOTA_TYPES

# The level walk of `quotaMetricTags` with several kinds configured: (level, keeps user, keeps client).
_TAG_WALK = ((1, True, True), (2, True, True), (3, True, False), (4, True, True), (5, True, True),
             (6, True, False))
_TIERS = {(True, True): (1, 2, 4, 5), (True, False): (3, 6), (False, True): (7, 8)}


@dataclass(frozen=True)
class Tags:
    """The metric tags `user` and `client-id` ("" when a tag is not used)."""

    user: str
    client_id: str

    def as_dict(self) -> dict[str, str]:
        return {"user": self.user, "client-id": self.client_id}


@dataclass(frozen=True)
class Resolved:
    """The configured limit for some tags (None: unlimited) and the level that supplied it."""

    limit: float | None
    level: int | None


class QuotaResolver:
    """Kafka's default quota callback over a static configuration, for all four quota types."""

    def __init__(self, config: ClientQuotaConfig) -> None:
        self._quotas: dict[str, dict[QuotaEntity, float]] = {
            quota_type: config.for_key(CONFIG_KEY[quota_type]) for quota_type in QUOTA_TYPES
        }
        self._mask = {quota_type: _mask(entities) for quota_type, entities in self._quotas.items()}

    def quota_types_enabled(self, quota_type: str) -> int:
        """The `quotaTypesEnabled` bitmask of the type's quota manager."""
        return self._mask[quota_type]

    def enabled(self, quota_type: str) -> bool:
        """Kafka records usage of a type only when some entity sets its quota."""
        return self._mask[quota_type] != 0

    def metric_tags(self, quota_type: str, user: str, client_id: str) -> Tags:
        """`DefaultQuotaCallback.quotaMetricTags`."""
        mask = self._mask[quota_type]
        if mask in (0, CLIENT_ID_QUOTA_ENABLED):
            return Tags("", client_id)
        if mask == USER_QUOTA_ENABLED:
            return Tags(user, "")
        if mask == USER_CLIENT_ID_QUOTA_ENABLED:
            return Tags(user, client_id)
        entities = self._quotas[quota_type]
        for level, keeps_user, keeps_client in _TAG_WALK:
            if level_entity(level, user, client_id) in entities:
                return Tags(user if keeps_user else "", client_id if keeps_client else "")
        return Tags("", client_id)

    def limit(self, quota_type: str, tags: Tags) -> Resolved:
        """`DefaultQuotaCallback.quotaLimit`: search the tier the tags name."""
        tier = _TIERS.get((tags.user != "", tags.client_id != ""))
        if tier is None:
            return Resolved(None, None)
        entities = self._quotas[quota_type]
        for level in tier:
            value = entities.get(level_entity(level, tags.user, tags.client_id))
            if value is not None:
                return Resolved(value, level)
        return Resolved(None, None)

    def resolve(self, quota_type: str, user: str, client_id: str) -> tuple[Tags, Resolved]:
        tags = self.metric_tags(quota_type, user, client_id)
        return tags, self.limit(quota_type, tags)


def _mask(entities: dict[QuotaEntity, float]) -> int:
    mask = 0
    for entity in entities:
        mask |= entity.level_bit
    return mask

