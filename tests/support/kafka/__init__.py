"""Real Apache Kafka for the tests and `make kafka` (docs/real-kafka.md).

`cluster` (KafkaCluster: N combined KRaft nodes) over `node` (one JVM), `volume` (its tmpfs),
`properties` (its server.properties), `release` (which jars and logging), `ports`, `processes`;
`jmx_exporter` and `strimzi` (what the brokers can carry), `prometheus` (a real Prometheus server),
`admin` (the calls the tests make), `external` (QUOTAPLANE_KAFKA_BOOTSTRAP), `fixtures` (the pytest
session fixtures), `fill` (a producer that fills one broker) and `__main__` (`make kafka`).
"""
