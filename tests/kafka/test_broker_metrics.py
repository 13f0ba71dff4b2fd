"""The brokers' quota and bytes-in metrics through the JMX exporter (deploy/kafka/jmx-exporter.yaml)
and a real Prometheus (docs/real-kafka.md, "Broker metrics"): a client producing above its produce
quota shows its byte rate and throttle time, with both entity labels, and the topic its one-minute
bytes-in rate."""

from __future__ import annotations

import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer

from tests.support import tools
from tests.support.kafka.admin import alter_client_quota, create_topic
from tests.support.kafka.cluster import KafkaCluster
from tests.support.kafka.prometheus import Prometheus

QUOTA = 20_000  # bytes/s: the 100 kB below take five seconds at it


@pytest.fixture
def quotas(kafka_cluster: KafkaCluster) -> Iterator[list[tuple[dict[str, str | None], str]]]:
    """The quotas a test sets, removed again after it (the cluster outlives the test)."""
    made: list[tuple[dict[str, str | None], str]] = []
    yield made
    for entity, key in made:
        alter_client_quota(kafka_cluster.bootstrap, entity, key, None)


def produce_fast(bootstrap: str, client_id: str, topic: str, count: int, size: int) -> list[float]:
    """`count` messages at once as `client_id`; the throttle times (ms) the brokers returned."""
    throttles: list[float] = []
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 5,
                         "throttle_cb": lambda event: throttles.append(event.throttle_time * 1000)})
    for _ in range(count):
        producer.produce(topic, b"x" * size)
        producer.poll(0)
    assert producer.flush(60) == 0
    return throttles


def one(prometheus: Prometheus, expr: str) -> dict[str, str]:
    [series] = prometheus.wait_for(expr, lambda result: len(result) == 1)
    return series["metric"]


def test_a_throttled_client_and_its_topic_in_prometheus(
        kafka_cluster: KafkaCluster, kafka_metrics: Prometheus, quotas: list) -> None:
    bootstrap = kafka_cluster.bootstrap
    suffix = uuid.uuid4().hex[:8]
    topic, client, paired = f"metered-{suffix}", f"metered-{suffix}", f"paired-{suffix}"
    create_topic(bootstrap, topic, partitions=1, replicas=1)
    # one client's quota at the client-id level, another's at user + client-id (PLAINTEXT: ANONYMOUS)
    for entity in ({"client-id": client}, {"user": "ANONYMOUS", "client-id": paired}):
        alter_client_quota(bootstrap, entity, "producer_byte_rate", QUOTA)
        quotas.append((entity, "producer_byte_rate"))
    time.sleep(1)  # the quota reaches every broker's quota manager through the metadata log

    throttles = produce_fast(bootstrap, client, topic, 100, 1000)
    assert max(throttles) > 0, "the brokers never throttled a client 5x over its quota"
    produce_fast(bootstrap, paired, topic, 20, 1000)

    job = 'job="kafka"'
    rate = one(kafka_metrics, f'max_over_time(kafka_server_client_byte_rate{{{job},quota_type="produce",'
                              f'client_id="{client}"}}[5m]) > 0')
    assert "user" not in rate  # the MBean has no user part: the exporter's empty label, absent in Prometheus
    one(kafka_metrics, f'max_over_time(kafka_server_client_throttle_time_seconds{{{job},quota_type="produce",'
                       f'user="",client_id="{client}"}}[5m]) > 0')
    both = one(kafka_metrics, f'max_over_time(kafka_server_client_byte_rate{{{job},quota_type="produce",'
                              f'client_id="{paired}"}}[5m]) > 0')
    assert both["user"] == "ANONYMOUS"
    # the meter ticks every 5 s: the one-minute rate of the topic, on the broker that leads it
    of_topic = f'{job},topic="{topic}"'
    one(kafka_metrics, f"max_over_time(kafka_server_topic_bytes_in_one_minute_rate{{{of_topic}}}[5m]) > 0")
    [total] = kafka_metrics.wait_for(f"sum(kafka_server_topic_bytes_in_total{{{of_topic}}}) > 120000")
    assert float(total["value"][1]) > 120_000  # 120 messages of 1000 bytes, plus batch headers


def test_the_exported_metrics_pass_promtool(kafka_cluster: KafkaCluster, kafka_metrics: Prometheus) -> None:
    for target in kafka_cluster.metrics_targets().values():
        with urllib.request.urlopen(f"http://{target}/metrics", timeout=10) as answer:
            text = answer.read()
        assert b"kafka_server_broker_bytes_in_total" in text
        check = subprocess.run([tools.promtool(), "check", "metrics"], input=text, capture_output=True,
                               timeout=60)
        assert check.returncode == 0 and check.stdout + check.stderr == b"", check
