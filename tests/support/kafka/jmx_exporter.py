"""The Prometheus JMX exporter java agent (`deploy/jmx-exporter/pom.xml`) and the rules the project
ships for it (`deploy/kafka/jmx-exporter.yaml`; docs/real-kafka.md, "Broker metrics")."""

from __future__ import annotations

from tests.support.kafka.release import DEPLOY

PART = "jmx-exporter"
AGENT_ARTIFACT = "jmx_prometheus_javaagent"
RULES = DEPLOY / "kafka" / "jmx-exporter.yaml"
