"""A real Prometheus server (Debian's `prometheus` package; `make test` installs it) on loopback, with
its configuration and TSDB in a temporary directory, scraping every second the targets a test gives
it, and its HTTP query API.

Targets are file-based service discovery (`file_sd_configs`): `scrape(job, targets)` writes one file
per job and Prometheus picks it up within a second, so one server serves a whole test session.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.support.kafka.ports import HOST, free_port
from tests.support.kafka.processes import orphan_guard

INSTALL_HINT = ("Debian's prometheus package: `make test` installs it where it runs as root with apt-get "
                "(scripts/install-promtool.sh), or `apt-get install prometheus`")
SCRAPE_INTERVAL = "1s"


class PrometheusFailed(RuntimeError):
    """The server did not start, or a query failed; the message says why (with its log's tail)."""


def binary() -> str:
    found = shutil.which("prometheus")
    if found is None:
        raise PrometheusFailed(f"the `prometheus` binary is not on PATH: {INSTALL_HINT}")
    return found


class Prometheus:
    def __init__(self, work_dir: Path | None = None, start_timeout: float = 30.0) -> None:
        self.work = work_dir or Path(tempfile.mkdtemp(prefix="quotaplane-prometheus-"))
        self._own_work = work_dir is None
        self.port = free_port()
        self.start_timeout = start_timeout
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def log(self) -> Path:
        return self.work / "prometheus.log"

    def start(self) -> Prometheus:
        (self.work / "targets").mkdir(parents=True, exist_ok=True)
        config = self.work / "prometheus.yml"
        config.write_text(
            f"global:\n  scrape_interval: {SCRAPE_INTERVAL}\n  scrape_timeout: {SCRAPE_INTERVAL}\n"
            f"  evaluation_interval: {SCRAPE_INTERVAL}\n"
            "scrape_configs:\n  - job_name: targets\n    file_sd_configs:\n"
            f"      - files: ['{self.work / 'targets'}/*.json']\n        refresh_interval: 1s\n")
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                [*orphan_guard(), binary(), f"--config.file={config}",
                 f"--storage.tsdb.path={self.work / 'tsdb'}", f"--web.listen-address={HOST}:{self.port}",
                 "--storage.tsdb.retention.time=1d", "--log.level=warn"],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + self.start_timeout
        while not self._ready():
            if self.process.poll() is not None or time.monotonic() > deadline:
                tail = "\n".join(self.log.read_text(errors="replace").splitlines()[-20:])
                self.close()
                raise PrometheusFailed(f"Prometheus did not become ready on {self.url} within "
                                       f"{self.start_timeout:g} s (exit {self.process.returncode}):\n{tail}")
            time.sleep(0.1)
        return self

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as answer:
                return answer.status == 200
        except OSError:
            return False

    def scrape(self, job: str, targets: Sequence[str], labels: Mapping[str, str] | None = None) -> None:
        """Scrape `targets` (`host:port`, path /metrics) as job `job` from now on; an empty list stops."""
        groups = [{"targets": list(targets), "labels": {"job": job, **(labels or {})}}] if targets else []
        path = self.work / "targets" / f"{job}.json"
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(groups))
        os.replace(temporary, path)  # renamed: Prometheus never reads half a file

    def api(self, endpoint: str, **params: str) -> Any:
        query = urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/{endpoint}?{query}", timeout=10) as answer:
                body = json.load(answer)
        except urllib.error.HTTPError as error:
            body = json.loads(error.read() or b"{}")
        except OSError as error:
            raise PrometheusFailed(f"GET {endpoint} {params}: {error}") from None
        if body.get("status") != "success":
            raise PrometheusFailed(f"GET {endpoint} {params}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """The instant vector `expr` evaluates to now: [{"metric": {...}, "value": [t, "v"]}, ...]."""
        return list(self.api("query", query=expr)["result"])

    def wait_for(self, expr: str, predicate: Callable[[list[dict[str, Any]]], bool] = bool,
                 timeout: float = 30.0) -> list[dict[str, Any]]:
        """Query `expr` until `predicate` holds for the result; raise with the last result when it never
        does."""
        deadline = time.monotonic() + timeout
        while True:
            result = self.query(expr)
            if predicate(result):
                return result
            if time.monotonic() > deadline:
                targets = [(t["labels"].get("job"), t["scrapeUrl"], t["health"], t.get("lastError"))
                           for t in self.api("targets")["activeTargets"]]
                raise AssertionError(f"Prometheus: {expr} did not give the expected result within "
                                     f"{timeout:g} s; last: {result}; targets: {targets}")
            time.sleep(0.5)

    def wait_up(self, job: str, count: int, timeout: float = 30.0) -> None:
        """Wait until `count` targets of `job` were scraped successfully."""
        self.wait_for(f'up{{job="{job}"}} == 1', lambda r: len(r) >= count, timeout)

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._own_work:
            shutil.rmtree(self.work, ignore_errors=True)

    def __enter__(self) -> Prometheus:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
