"""Start and stop one real Pulsar standalone (broker, in-process RocksDB metadata store, one bookie).

`org.apache.pulsar.PulsarStandaloneStarter --config FILE -nfw` (functions worker off) from the class
path `scripts/resolve-java-parts.sh` resolved from `deploy/pulsar/pom.xml`, with Java 17 or newer (the
release's classes are Java 17 class files), on free loopback ports, its data in a temporary directory
that `stop` removes. `start` returns once the admin API answers and lists `public/default`, or raises
`PulsarStartError` with the tail of the broker's log: it never waits longer than `timeout_s`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.java_parts import classpath
from tests.support.pulsar.config import CLUSTER, SUPERUSER, Ports, write_conf
from tests.support.pulsar.tokens import new_secret, token

HERE = Path(__file__).resolve().parent
MAIN_CLASS = "org.apache.pulsar.PulsarStandaloneStarter"
JAVA_MIN = 17
# Heap and direct memory for a broker and a bookie holding a few MB of test data (`make pulsar`
# measures what it uses); serial GC: two cores are shared with Spark and Kafka.
JVM_MEMORY = ("-Xms64m", "-Xmx384m", "-XX:MaxDirectMemorySize=256m", "-XX:+UseSerialGC",
              "-XX:ActiveProcessorCount=2", "-Xss512k")
# What upstream `bin/pulsar` passes on Java 17 for Netty, BookKeeper and the JVM metrics.
JVM_OPENS = ("--add-opens", "java.base/java.io=ALL-UNNAMED",
             "--add-opens", "java.base/java.util.zip=ALL-UNNAMED",
             "--add-opens", "java.base/sun.net=ALL-UNNAMED", "--add-opens", "java.base/java.nio=ALL-UNNAMED",
             "--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED",
             "--add-opens", "java.management/sun.management=ALL-UNNAMED",
             "--add-opens", "jdk.management/com.sun.management.internal=ALL-UNNAMED",
             "--add-opens", "java.base/jdk.internal.platform=ALL-UNNAMED",
             "-Dio.netty.tryReflectionSetAccessible=true", "-Dpulsar.allocator.exit_on_oom=true")
DEFAULT_TIMEOUT_S = 180.0


class PulsarStartError(RuntimeError):
    """The broker did not come up: why, and the tail of its log."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def free_ports(count: int) -> list[int]:
    """`count` distinct free loopback ports (held open together while chosen)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


def java_version(java: str) -> int | None:
    """The major version `java -version` reports, or None when it cannot run."""
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def find_java() -> str:
    """`QUOTAPLANE_PULSAR_JAVA`, else `$JAVA_HOME/bin/java`, else `java` on PATH, if it is Java 17+."""
    home = os.environ.get("JAVA_HOME")
    candidates = [os.environ.get("QUOTAPLANE_PULSAR_JAVA"),
                  str(Path(home) / "bin" / "java") if home else None, shutil.which("java")]
    tried = []
    for java in filter(None, candidates):
        version = java_version(java)
        if version is not None and version >= JAVA_MIN:
            return java
        tried.append(f"{java} ({'does not run' if version is None else f'Java {version}'})")
    raise PulsarStartError(
        f"Pulsar 4.x needs Java {JAVA_MIN} or newer; tried: {', '.join(tried) or 'no java found'}. "
        "Install one (Debian: apt-get install openjdk-17-jre-headless) or set QUOTAPLANE_PULSAR_JAVA")


def log_tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"(no log at {path})"
    return "\n".join(text[-lines:]) or f"({path} is empty)"


@dataclass
class Standalone:
    """One running standalone; `admin_url`, `service_url` and the super-user `token` reach it."""

    process: subprocess.Popen[bytes]
    ports: Ports
    data_dir: Path
    secret: bytes
    check_interval_s: int
    started_in_s: float = 0.0
    log_path: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log_path = self.data_dir / "pulsar.log"

    @property
    def admin_url(self) -> str:
        return f"http://127.0.0.1:{self.ports.web}"

    @property
    def service_url(self) -> str:
        return f"pulsar://127.0.0.1:{self.ports.broker}"

    @property
    def token(self) -> str:
        return token(self.secret, SUPERUSER)

    def token_for(self, role: str) -> str:
        """A valid token for another role (no permissions unless granted: 403 on admin calls)."""
        return token(self.secret, role)

    @property
    def cluster(self) -> str:
        return CLUSTER

    def memory_kib(self) -> dict[str, int]:
        """The JVM's resident memory now (`VmRSS`) and at its peak (`VmHWM`), KiB, from /proc."""
        out: dict[str, int] = {}
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    out[key] = int(value.split()[0])
        return out

    def log_tail(self, lines: int = 40) -> str:
        return log_tail(self.log_path, lines)

    def stop(self) -> None:
        """SIGTERM to the JVM (its shutdown hook closes the broker and the bookie), SIGKILL after 20 s,
        then remove the data directory."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        shutil.rmtree(self.data_dir, ignore_errors=True)


def _ready(admin_url: str, bearer: str) -> bool:
    request = urllib.request.Request(f"{admin_url}/admin/v2/namespaces/public",
                                     headers={"Authorization": f"Bearer {bearer}"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return "public/default" in json.loads(response.read())
    except (OSError, ValueError, urllib.error.URLError):
        return False


def start(check_interval_s: int = 1, timeout_s: float = DEFAULT_TIMEOUT_S) -> Standalone:
    """Start a standalone and wait until it serves `public/default` (or raise `PulsarStartError`)."""
    java = find_java()
    try:
        jars = classpath("pulsar")
    except RuntimeError as exc:
        raise PulsarStartError(str(exc)) from None
    data_dir = Path(tempfile.mkdtemp(prefix="quotaplane-pulsar-"))
    ports = Ports(*free_ports(3))
    secret = new_secret()
    conf = write_conf(data_dir / "standalone.conf", ports, secret, check_interval_s)
    log_path = data_dir / "pulsar.log"
    command = [java, *JVM_MEMORY, *JVM_OPENS, f"-Dlog4j2.configurationFile={HERE / 'log4j2.properties'}",
               f"-Dquotaplane.pulsar.log={log_path}", "-cp", jars, MAIN_CLASS, "--config", str(conf), "-nfw",
               "--metadata-dir", str(data_dir / "metadata"), "--bookkeeper-dir", str(data_dir / "bookie"),
               "--bookkeeper-port", str(ports.bookie)]
    began = time.monotonic()
    with open(data_dir / "stdout.log", "wb") as stdout:
        process = subprocess.Popen(command, cwd=data_dir, stdout=stdout, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    standalone = Standalone(process, ports, data_dir, secret, check_interval_s)
    bearer = standalone.token
    while True:
        if process.poll() is not None:
            tail = standalone.log_tail() + "\n--- stdout ---\n" + log_tail(data_dir / "stdout.log", 20)
            standalone.stop()
            raise PulsarStartError(f"Pulsar standalone exited with code {process.returncode} while starting; "
                                   f"its log ends:\n{tail}")
        if _ready(standalone.admin_url, bearer):
            standalone.started_in_s = time.monotonic() - began
            return standalone
        if time.monotonic() - began > timeout_s:
            tail = standalone.log_tail()
            standalone.stop()
            raise PulsarStartError(f"Pulsar standalone did not serve public/default within "
                                   f"{timeout_s:.0f} s; "
                                   f"its log ends:\n{tail}")
        time.sleep(0.5)
