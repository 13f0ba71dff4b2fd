"""What the live service needs from a Kafka cluster's Admin API, with no Kafka client imported.

`ClusterAdmin` is the interface the service loop uses; `quotaplane.live.kafka_admin` implements it
over a Kafka client library, and tests implement it in memory. The calls and their Kafka APIs:

- `active_brokers`: DescribeCluster (KIP-700), the brokers that are registered and not fenced;
- `log_dirs`: DescribeLogDirs v4+ of each broker (KIP-827 total and usable bytes of the volume that
  holds each log dir), the cluster volume source of spec: strimzi-cluster-wide-volume-quotas
  "Cluster Volume Source", with the size of every partition replica on each log dir (`partitionSize`,
  the forecast's `partition_sizes` input);
- `client_quotas` / `alter_client_quotas`: DescribeClientQuotas / AlterClientQuotas (KIP-546), the
  broker's own client quotas (Kafka `ClientQuotaManager`), through which the service enforces.

Quota entities are `(user, client_id)` pairs as Kafka's `ClientQuotaEntity` names them: `None` where
the entity has no such component, `"<default>"` for the default entity of that type (Kafka's
`ConfigEntityName.Default`). So `("<default>", None)` is the default user, `(None, "app")` the
client id `app`, and `("alice", "<default>")` the default client id of user `alice`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

DEFAULT_ENTITY = "<default>"
"""The name of a default quota entity (Kafka `ConfigEntityName.Default`)."""

PRODUCER_BYTE_RATE = "producer_byte_rate"
"""The produce quota key, bytes per second (Kafka `QuotaConfig.PRODUCER_BYTE_RATE_OVERRIDE_CONFIG`)."""

QuotaEntity = tuple[str | None, str | None]
"""`(user, client_id)`: `None` for an absent component, `"<default>"` for a default entity."""


@dataclass(frozen=True)
class Replica:
    """One partition replica on a log dir (DescribeLogDirs `partitionSize`), as the broker reported
    it (a negative size is passed on: the collector leaves it out). `is_leader` is None when the
    client does not know the partition's leader."""

    topic: str
    partition: int
    size_bytes: int
    is_leader: bool | None = None


@dataclass(frozen=True)
class LogDir:
    """One log dir of one broker as DescribeLogDirs v4 reported it (KIP-827).

    `total_bytes` / `usable_bytes` are the volume's sizes, `None` when the broker did not report
    them. `error` is `None` for a healthy log dir, else `"<CODE>: <message>"`: the log dir's error
    code (e.g. `KAFKA_STORAGE_ERROR` for an offline dir), or, with `log_dir == ""`, a failure of the
    whole broker (`TIMEOUT`, `BROKER_NOT_AVAILABLE`, `NO_LOG_DIRS`, ...), so that every requested
    broker appears in the answer at least once. `replicas` are the partition replicas in the log dir
    (the future replica of an AlterReplicaLogDirs move, `isFutureKey`, is left out: the current
    replica is still reported where it is, and counting both would count the partition twice).
    """

    broker_id: int
    log_dir: str
    total_bytes: int | None
    usable_bytes: int | None
    error: str | None
    replicas: tuple[Replica, ...] = ()


@dataclass(frozen=True)
class QuotaAlteration:
    """Set `key` of `entity` to `value`, or remove the key when `value` is `None` (no quota)."""

    entity: QuotaEntity
    key: str
    value: float | None


class AdminError(Exception):
    """A cluster call that gave no usable answer.

    `reason` is a short upper-case code: `DESCRIBE_CLUSTER_ERROR`, `DESCRIBE_LOG_DIR_ERROR`,
    `DESCRIBE_QUOTAS_ERROR`, `ALTER_QUOTAS_ERROR` (the broker answered with an error or could not be
    reached) or `TIMEOUT` (no answer within the timeout); the message says which broker and why.
    """

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        self.message = message
        super().__init__(f"{reason}: {message}")


class ClusterAdmin(Protocol):
    """The Admin API calls of the live service (module docstring: the Kafka API behind each)."""

    def active_brokers(self) -> list[int]:
        """The ids of the brokers DescribeCluster lists as active (not fenced), ascending.

        Raises `AdminError` (`DESCRIBE_CLUSTER_ERROR` or `TIMEOUT`)."""
        ...

    def log_dirs(self, broker_ids: Sequence[int]) -> list[LogDir]:
        """The log dirs of each broker (DescribeLogDirs, one request per broker, concurrently).

        Never raises for one broker's failure: a broker that does not answer in time, answers with
        an error or is unknown gives one `LogDir` with `log_dir == ""` and the error."""
        ...

    def client_quotas(self) -> dict[QuotaEntity, dict[str, float]]:
        """Every user / client-id quota entity with its quota values (DescribeClientQuotas).

        Raises `AdminError` (`DESCRIBE_QUOTAS_ERROR` or `TIMEOUT`)."""
        ...

    def alter_client_quotas(self, alterations: Sequence[QuotaAlteration]) -> dict[QuotaEntity, str | None]:
        """Apply the alterations in one AlterClientQuotas request: per entity `None` when applied,
        else `"<CODE>: <message>"` (that entity was not changed).

        Raises `AdminError` (`ALTER_QUOTAS_ERROR` or `TIMEOUT`) when no broker answered, in which
        case the alterations may or may not have been applied."""
        ...

    def close(self) -> None:
        """Release the connections and threads (idempotent)."""
        ...
