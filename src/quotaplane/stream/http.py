"""`/metrics` (Prometheus text) and `/healthz` of `quotaplane stream`."""

from __future__ import annotations

import threading

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from quotaplane.core.http import EndpointServer


class MetricsServer(EndpointServer):
    def __init__(self, host: str, port: int, registry: CollectorRegistry, lock: threading.Lock) -> None:
        super().__init__(host, port, thread_name="quotaplane-stream-http")
        self.registry, self.lock = registry, lock

    def answer(self, path: str) -> tuple[int, str, bytes]:
        if path == "/metrics":
            with self.lock:
                return 200, CONTENT_TYPE_LATEST, generate_latest(self.registry)
        if path == "/healthz":
            return 200, "text/plain; charset=utf-8", b"ok\n"
        return 404, "text/plain; charset=utf-8", b"not found: /metrics, /healthz\n"
