"""Which Kafka the cluster runs: a `deploy/<part>/pom.xml` resolved by `scripts/resolve-java-parts.sh`,
and how that release is told where to log.

Kafka 4.x logs through log4j2 (`-Dlog4j2.configurationFile`, the pom adds log4j-core and the SLF4J
binding); Kafka 3.x logged through reload4j (log4j 1, `-Dlog4j.configuration`), so a 3.x part would
bring its own `log4j.properties`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.support import java_parts

DEPLOY = java_parts.REPO / "deploy"


@dataclass(frozen=True)
class Release:
    part: str  # the deploy/<part>/ directory with its pom.xml and logging configuration
    log4j2: bool = True

    @property
    def log_config(self) -> Path:
        return DEPLOY / self.part / ("log4j2.properties" if self.log4j2 else "log4j.properties")

    def classpath(self) -> str:
        return java_parts.classpath(self.part)

    def version(self) -> str:
        """The kafka_2.13 version on the class path (e.g. `4.1.2`)."""
        for jar in self.classpath().split(":"):
            name = Path(jar).name
            if name.startswith("kafka_2.13-") and name.endswith(".jar"):
                return name[len("kafka_2.13-"):-len(".jar")]
        raise java_parts.MissingPart(f"no kafka_2.13 jar in the Java part {self.part!r}")

    def logging_options(self, logs: Path) -> list[str]:
        key = "log4j2.configurationFile" if self.log4j2 else "log4j.configuration"
        value = str(self.log_config) if self.log4j2 else self.log_config.as_uri()
        return [f"-D{key}={value}", f"-Dkafka.logs.dir={logs}"]


KAFKA = Release("kafka")
