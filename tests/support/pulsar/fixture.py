"""The Pulsar the tests use: one standalone per test session, or an external one.

`QUOTAPLANE_PULSAR_ADMIN` (`http://host:8080`) and `QUOTAPLANE_PULSAR_URL` (`pulsar://host:6650`) point
the same tests at a running Pulsar (`QUOTAPLANE_PULSAR_TOKEN`: a super-user token when it authenticates);
otherwise the session starts a standalone (`launcher.start`) and stops it at the end. Every test that
uses it is in the xdist group `pulsar`, so one test process starts it once. A standalone that does not
come up fails each test that needs it with the reason and the tail of its log; nothing is skipped.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tests.support.pulsar.launcher import PulsarStartError, Standalone, start

ADMIN_ENV = "QUOTAPLANE_PULSAR_ADMIN"
URL_ENV = "QUOTAPLANE_PULSAR_URL"
TOKEN_ENV = "QUOTAPLANE_PULSAR_TOKEN"


class AdminCallFailed(AssertionError):
    """A test's own admin call (setting up a quota, a rate, a topic) failed."""


@dataclass
class PulsarTarget:
    """How tests reach the broker: admin URL, service URL, a super-user token (None: no authentication)."""

    admin_url: str
    service_url: str
    token: str | None
    standalone: Standalone | None = None

    def client(self, **kwargs: Any) -> Any:
        """A pulsar-client `Client` authenticated with the super-user token, logging errors only."""
        import logging

        import pulsar

        logger = logging.getLogger("pulsar-client")
        logger.setLevel(logging.ERROR)
        auth = pulsar.AuthenticationToken(self.token) if self.token else None
        return pulsar.Client(self.service_url, authentication=auth, logger=logger,
                             operation_timeout_seconds=10, **kwargs)

    def call(self, method: str, path: str, body: Any = None, token: str | None = "super") -> Any:
        """An admin REST call (`path` below the admin URL); its decoded JSON answer (None when empty).
        Raises `AdminCallFailed` with the status and the broker's reason."""
        headers = {"Content-Type": "application/json"}
        bearer = self.token if token == "super" else token
        if bearer:
            headers["Authorization"] = f"Bearer {bearer}"
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.admin_url}/{path.lstrip('/')}", data=data, method=method,
                                         headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                text = response.read()
        except urllib.error.HTTPError as exc:
            raise AdminCallFailed(f"{method} {path}: HTTP {exc.code}: {exc.read()[:300]!r}") from None
        return json.loads(text) if text.strip() else None

    def metrics(self) -> str:
        """The broker's Prometheus exposition (`/metrics/`)."""
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        request = urllib.request.Request(f"{self.admin_url}/metrics/", headers=headers)
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.read().decode()

    def runtime_config(self) -> dict[str, str]:
        return self.call("GET", "admin/v2/brokers/configuration/runtime")


def session_target() -> Iterator[PulsarTarget | PulsarStartError]:
    """The session's broker (a generator for a session fixture); a standalone that failed to start is
    yielded as its `PulsarStartError`, which each test raises."""
    admin, url = os.environ.get(ADMIN_ENV), os.environ.get(URL_ENV)
    if admin or url:
        if not (admin and url):
            raise PulsarStartError(f"set both {ADMIN_ENV} (http://host:port) and {URL_ENV} (pulsar://host:port)")
        yield PulsarTarget(admin.rstrip("/"), url, os.environ.get(TOKEN_ENV))
        return
    try:
        standalone = start()
    except PulsarStartError as exc:
        yield exc
        return
    try:
        yield PulsarTarget(standalone.admin_url, standalone.service_url, standalone.token, standalone)
    finally:
        standalone.stop()
