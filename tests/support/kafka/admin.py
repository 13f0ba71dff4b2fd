"""Admin calls the tests make on the real cluster, independent of quotaplane's own admin adapter
(which is what they check): topics through confluent-kafka, DescribeLogDirs and AlterClientQuotas
through kafka-python's protocol classes."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic
from kafka.admin import KafkaAdminClient
from kafka.protocol.admin import AlterClientQuotasRequest, DescribeLogDirsRequest

TIMEOUT = 30.0


@contextmanager
def kafka_python_admin(bootstrap: str) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=int(TIMEOUT * 1000))
    try:
        yield client
    finally:
        client.close()


def _send(client: KafkaAdminClient, request: Any, node_id: int | None = None) -> Any:
    async def call() -> Any:
        return await client._manager.send(request, node_id=node_id)
    return client._manager.run(call)


def create_topic(bootstrap: str, name: str, partitions: int = 1, replicas: int = 1,
                 assignment: Sequence[Sequence[int]] | None = None,
                 config: Mapping[str, str] | None = None) -> None:
    """Create a topic and wait until it is created (`assignment`: the replicas of each partition)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    settings = dict(config or {})
    topic = (NewTopic(name, len(assignment), -1, replica_assignment=[list(r) for r in assignment],
                      config=settings)
             if assignment is not None
             else NewTopic(name, num_partitions=partitions, replication_factor=replicas, config=settings))
    admin.create_topics([topic], operation_timeout=TIMEOUT)[name].result(TIMEOUT)


def delete_topic(bootstrap: str, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_topics([name], operation_timeout=TIMEOUT)[name].result(TIMEOUT)


def log_dir_sizes(bootstrap: str, broker_ids: Sequence[int]) -> dict[int, dict[str, tuple[int, int]]]:
    """DescribeLogDirs v4 (KIP-827) of each broker: {broker: {log dir: (total bytes, usable bytes)}}."""
    out: dict[int, dict[str, tuple[int, int]]] = {}
    with kafka_python_admin(bootstrap) as client:
        for broker in broker_ids:
            response = _send(client, DescribeLogDirsRequest(topics=[], min_version=4), broker)
            if response.API_VERSION < 4:
                raise AssertionError(f"broker {broker} answered DescribeLogDirs v{response.API_VERSION}, "
                                     "not v4")
            out[broker] = {r.log_dir: (r.total_bytes, r.usable_bytes) for r in response.results}
    return out


def alter_client_quota(bootstrap: str, entity: Mapping[str, str | None], key: str,
                       value: float | None) -> None:
    """Set (or with `value` None remove) one quota of an entity, e.g. {"client-id": "c"} and
    `producer_byte_rate`; a None entity name is the default entity of that type."""
    entry = AlterClientQuotasRequest.EntryData
    request = AlterClientQuotasRequest(validate_only=False, entries=[entry(
        entity=[entry.EntityData(entity_type=kind, entity_name=name) for kind, name in entity.items()],
        ops=[entry.OpData(key=key, value=0.0 if value is None else float(value), remove=value is None)])])
    with kafka_python_admin(bootstrap) as client:
        response = _send(client, request)
    errors = [(e.error_code, e.error_message) for e in response.entries if e.error_code]
    if errors:
        raise AssertionError(f"AlterClientQuotas {dict(entity)} {key}={value}: {errors}")


