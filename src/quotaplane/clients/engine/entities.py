"""Client quota entities (`user`, `client-id`, each a name or the default) and the quotas set on them.

spec: Kafka `ClientQuotaManager`. An entity is a user, a client id, or a
(user, client id) pair; `<default>` names the default user or default client id. The eight entity
shapes form Kafka's precedence levels, 1 the most specific.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final

DEFAULT_NAME: Final = "<default>"


class _Default:
    """The default user or default client id (distinct from any real name, even "<default>")."""

    _instance: _Default | None = None

    def __new__(cls) -> _Default:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return DEFAULT_NAME

    def __reduce__(self) -> str:
        return "DEFAULT"


DEFAULT: Final = _Default()

# One part of an entity: absent (None), the default, or a name.
Part = str | _Default | None

# Level bits of `ClientQuotaManager.quotaTypesEnabled`.
CLIENT_ID_QUOTA_ENABLED = 1
USER_QUOTA_ENABLED = 2
USER_CLIENT_ID_QUOTA_ENABLED = 4


@dataclass(frozen=True)
class QuotaEntity:
    """A quota entity; at least one part is present."""

    user: Part = None
    client_id: Part = None

    def __post_init__(self) -> None:
        if self.user is None and self.client_id is None:
            raise ValueError("a quota entity needs a user or a client-id")

    @property
    def level_bit(self) -> int:
        """Which `quotaTypesEnabled` bit an entity of this shape sets."""
        if self.user is not None and self.client_id is not None:
            return USER_CLIENT_ID_QUOTA_ENABLED
        if self.user is not None:
            return USER_QUOTA_ENABLED
        return CLIENT_ID_QUOTA_ENABLED

    @property
    def path(self) -> str:
        """The entity's ZooKeeper-style path, as Kafka's precedence list names it."""
        parts = []
        if self.user is not None:
            parts.append(f"users/{_show(self.user)}")
        if self.client_id is not None:
            parts.append(f"clients/{_show(self.client_id)}")
        return "/config/" + "/".join(parts)

    def describe(self) -> str:
        """`user=alice,client-id=<default>`: how errors name the entity."""
        parts = []
        if self.user is not None:
            parts.append(f"user={_show(self.user)}")
        if self.client_id is not None:
            parts.append(f"client-id={_show(self.client_id)}")
        return ",".join(parts)


def _show(part: Part) -> str:
    return DEFAULT_NAME if part is DEFAULT else str(part)


# Kafka's precedence levels (`ClientQuotaManager` javadoc), as (user part, client part) shapes:
# "name" is the request's own user or client id, "default" the default entity, None absent.
LEVELS: dict[int, tuple[str | None, str | None]] = {
    1: ("name", "name"),
    2: ("name", "default"),
    3: ("name", None),
    4: ("default", "name"),
    5: ("default", "default"),
    6: ("default", None),
    7: (None, "name"),
    8: (None, "default"),
}
LEVEL_PATHS: dict[int, str] = {
    1: "/config/users/<user>/clients/<client-id>",
    2: "/config/users/<user>/clients/<default>",
    3: "/config/users/<user>",
    4: "/config/users/<default>/clients/<client-id>",
    5: "/config/users/<default>/clients/<default>",
    6: "/config/users/<default>",
    7: "/config/clients/<client-id>",
    8: "/config/clients/<default>",
}


def level_entity(level: int, user: str, client_id: str) -> QuotaEntity:
    """The entity that level `level` looks up for a request of (`user`, `client_id`)."""
    user_shape, client_shape = LEVELS[level]

    def part(shape: str | None, name: str) -> Part:
        return None if shape is None else (DEFAULT if shape == "default" else name)

    return QuotaEntity(part(user_shape, user), part(client_shape, client_id))


@dataclass(frozen=True)
class ClientQuotaConfig:
    """The configured quotas: entity -> {config key: value} (keys as `CONFIG_KEY` names them)."""

    quotas: Mapping[QuotaEntity, Mapping[str, float]] = field(default_factory=dict)
    source: str = ""

    def __iter__(self) -> Iterator[tuple[QuotaEntity, Mapping[str, float]]]:
        return iter(self.quotas.items())

    def __len__(self) -> int:
        return len(self.quotas)

    def for_key(self, key: str) -> dict[QuotaEntity, float]:
        """The entities that set `key`, with its value (one quota manager's `overriddenQuotas`)."""
        return {entity: values[key] for entity, values in self.quotas.items() if key in values}
