"""The Strimzi quotas plugin (io.strimzi:kafka-quotas-plugin 0.3.1, the newest release Maven Central
serves) installed in the real brokers (docs/real-kafka.md, "The Strimzi quotas plugin"): a volume
filled past the plugin's per-volume limit drops its throttle factor to 0 on every broker, read
through the JMX exporter and Prometheus, and a producer is throttled; emptied, the factor is 1 again."""

from __future__ import annotations

import time

from confluent_kafka import Producer

from tests.support.kafka.cluster import MIB, KafkaCluster
from tests.support.kafka.prometheus import Prometheus
from tests.support.kafka.strimzi import PREFIX

JOB = 'job="kafka-strimzi"'


def factors(prometheus: Prometheus, value: float) -> list[dict]:
    """Wait until the plugin on each of the 3 brokers reports `value` as its throttle factor."""
    return prometheus.wait_for(f"strimzi_quotas_throttle_factor{{{JOB}}} == {value}",
                               lambda result: len(result) == 3, timeout=60)


def throttle_times(bootstrap: str, client_id: str, count: int = 20, size: int = 1000) -> list[float]:
    """The throttle times (ms) the brokers return to a producer of `count` messages."""
    throttles: list[float] = []
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 0,
                         "throttle_cb": lambda event: throttles.append(event.throttle_time * 1000)})
    for _ in range(count):
        producer.produce("strimzi-smoke", b"x" * size)
        producer.poll(0)
    assert producer.flush(60) == 0
    return throttles


def test_a_volume_past_the_limit_throttles_every_producer(strimzi_cluster: KafkaCluster,
                                                          strimzi_metrics: Prometheus) -> None:
    limit = int(strimzi_cluster.properties[PREFIX + "storage.per.volume.limit.min.available.bytes"])
    factors(strimzi_metrics, 1)
    assert max(throttle_times(strimzi_cluster.bootstrap, "before-fill"), default=0) == 0

    volume = strimzi_cluster.node(2).volume
    ballast = volume.fill("ballast-past-limit", volume.free_bytes() - limit + 4 * MIB)
    try:
        assert volume.free_bytes() <= limit
        factors(strimzi_metrics, 0)
        strimzi_metrics.wait_for(f'strimzi_quotas_volume_available_bytes{{{JOB},broker_id="2"}} <= {limit}',
                                 lambda result: len(result) == 3)
        # factor 0: the produce quota is max(quota x 0, 1) = 1 byte/s for every client
        assert max(throttle_times(strimzi_cluster.bootstrap, "while-full", count=5)) > 0
    finally:
        ballast.unlink()
    factors(strimzi_metrics, 1)
    time.sleep(2)  # the 1 byte/s window of the last producer's client has passed (quota.window.num=3)
    assert max(throttle_times(strimzi_cluster.bootstrap, "after-emptying"), default=0) == 0
