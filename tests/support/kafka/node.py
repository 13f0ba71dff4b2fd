"""One Kafka process of the test cluster: its directories, its JVM, and what a test does to it.

The broker is `kafka.Kafka server.properties` and its storage is formatted by
`kafka.tools.StorageTool format`, both from the same resolved jars (docs/real-kafka.md).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.kafka.ports import accepts
from tests.support.kafka.processes import orphan_guard
from tests.support.kafka.properties import NodePorts, render
from tests.support.kafka.release import Release
from tests.support.kafka.volume import Volume

STARTED = "Kafka Server started"  # KafkaRaftServer's line once the broker is unfenced and serving
FATAL = "Fatal error during"  # "... KafkaRaftServer startup. Prepare to shutdown": it exits next
# A test broker handles little traffic, so the quick compiler alone (C2's compilations only slow its
# start on shared cores) and a small heap with the serial collector are enough.
JVM_OPTIONS = ("-Xms64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true")
TAIL_LINES = 40


class NodeFailed(RuntimeError):
    """A node did not come up (or could not be formatted); the message ends with its log's tail."""


def java() -> str:
    home = os.environ.get("JAVA_HOME")
    binary = Path(home) / "bin" / "java" if home else None
    found = str(binary) if binary and binary.is_file() else shutil.which("java")
    if not found:
        raise NodeFailed("no `java` on PATH (or $JAVA_HOME/bin/java): Kafka needs Java 17 or later")
    return found


@dataclass
class Node:
    node_id: int
    work: Path  # this node's directory in the cluster's work dir
    ports: NodePorts
    volume: Volume
    release: Release
    heap: str = "320m"
    extra_classpath: tuple[str, ...] = ()
    jmx_exporter: tuple[Path, Path] | None = None  # (agent jar, rules file)
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _started_from: int = 0  # server.log's size when the current process was started

    @property
    def log_dir(self) -> Path:
        """The broker's `log.dirs` entry: a directory on its volume, as on a real mount."""
        return self.volume.path / "kafka-logs"

    @property
    def metadata_dir(self) -> Path:
        return self.work / "metadata"

    @property
    def logs(self) -> Path:
        return self.work / "logs"

    @property
    def config_file(self) -> Path:
        return self.work / "server.properties"

    @property
    def server_log(self) -> Path:
        return self.logs / "server.log"

    @property
    def stdout_log(self) -> Path:
        return self.logs / "stdout.log"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.ports.broker}"

    @property
    def metrics_url(self) -> str | None:
        return None if self.ports.metrics is None else f"http://127.0.0.1:{self.ports.metrics}/metrics"

    def write_config(self, props: dict[str, str]) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        self.config_file.write_text(render(props))

    def _command(self, main: str, *args: str, agent: bool) -> list[str]:
        classpath = os.pathsep.join([self.release.classpath(), *self.extra_classpath])
        options = [f"-Xmx{self.heap}", *JVM_OPTIONS, *self.release.logging_options(self.logs)]
        if agent and self.jmx_exporter is not None and self.ports.metrics is not None:
            jar, rules = self.jmx_exporter
            options.append(f"-javaagent:{jar}=127.0.0.1:{self.ports.metrics}:{rules}")
        return [*orphan_guard(), java(), *options, "-cp", classpath, main, *args]

    def format(self, cluster_id: str) -> subprocess.Popen[bytes]:
        """Start `StorageTool format` for this node (the caller waits: nodes format in parallel)."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.metadata_dir.mkdir(parents=True, exist_ok=True)
        command = self._command("kafka.tools.StorageTool", "format", "-c", str(self.config_file),
                                "-t", cluster_id, agent=False)
        with (self.logs / "format.log").open("wb") as out:
            return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def start(self) -> None:
        if self.alive():
            raise NodeFailed(f"node {self.node_id} is already running (pid {self.process.pid})")
        self._started_from = self.server_log.stat().st_size if self.server_log.exists() else 0
        with self.stdout_log.open("ab") as out:
            self.process = subprocess.Popen(self._command("kafka.Kafka", str(self.config_file), agent=True),
                                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def _logged(self) -> bytes:
        """What the current process has logged so far."""
        if not self.server_log.exists():
            return b""
        with self.server_log.open("rb") as log:
            log.seek(self._started_from)
            return log.read()

    def started(self) -> bool:
        """Whether the current process has logged that it serves, and its broker port accepts."""
        return self.alive() and STARTED.encode() in self._logged() and accepts(self.ports.broker)

    def wait_started(self, deadline: float, timeout: float) -> None:
        """Return once the node serves; raise `NodeFailed` with its log's tail when its process exits
        or at the deadline."""
        while not self.started():
            if self.alive() and FATAL.encode() in self._logged():
                self.kill()  # rather than wait for its shutdown hooks
                raise NodeFailed(f"Kafka node {self.node_id} failed to start\n" + self.log_tail())
            if self.process is None or self.process.poll() is not None:
                code = None if self.process is None else self.process.returncode
                raise NodeFailed(f"Kafka node {self.node_id} exited during start-up (exit {code})\n"
                                 + self.log_tail())
            if time.monotonic() > deadline:
                raise NodeFailed(f"Kafka node {self.node_id} was not up within {timeout:g} s\n"
                                 + self.log_tail())
            time.sleep(0.1)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM (a controlled shutdown), SIGKILL when it has not ended within `timeout`."""
        if not self.alive():
            return
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        """kill -9: no shutdown at all, as a crashed broker."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
        if self.process is not None:
            self.process.wait()

    def log_tail(self, lines: int = TAIL_LINES) -> str:
        """The ERROR lines the current process logged (its shutdown can push them out of the tail),
        then the tail of each log."""
        parts = []
        errors = [line for line in self._logged().decode(errors="replace").splitlines()
                  if "] ERROR " in line or "] FATAL " in line]
        if errors:
            parts.append(f"--- first errors in {self.server_log}\n" + "\n".join(e[:1000] for e in errors[:5]))
        for path in (self.server_log, self.stdout_log, self.logs / "format.log"):
            if path.exists() and path.stat().st_size:
                text = path.read_text(errors="replace").splitlines()[-lines:]
                parts.append(f"--- last {len(text)} lines of {path}\n" + "\n".join(text))
        return "\n".join(parts) or f"--- no log in {self.logs}"
