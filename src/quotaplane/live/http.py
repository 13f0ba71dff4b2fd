"""The service's HTTP endpoints: `/metrics` (Prometheus text), `/healthz`, `/decision` and
`/forecast` (JSON).

`/healthz` is 200 while the last round is younger than three intervals (or no round is due yet),
503 otherwise; `/decision` is the last decision row (the columns of the `storage_decisions` table);
`/forecast` the last round's volume forecasts, a JSON list of `VolumeForecast.as_dict()` (the lines
`quotaplane forecast` prints), `[]` before the first round.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from quotaplane.core.errors import ConfigError
from quotaplane.live.metrics import LiveStatus


class Endpoints:
    def __init__(self, host: str, port: int, registry: CollectorRegistry, status: LiveStatus,
                 interval_s: float, lock: threading.Lock) -> None:
        outer = self
        self.registry, self.status, self.interval_s, self.lock = registry, status, interval_s, lock
        self.started = time.time()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                code, kind, body = outer.answer(self.path.split("?")[0])
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                return

        try:
            self.server = ThreadingHTTPServer((host, port), Handler)
        except OSError as exc:
            raise ConfigError("--metrics-port", f"{host}:{port}", f"cannot listen: {exc.strerror}") from None
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="quotaplane-http", daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def start(self) -> None:
        self.thread.start()

    def close(self) -> None:
        if self.thread.is_alive():  # shutdown() waits for a serve_forever that was never started
            self.server.shutdown()
        self.server.server_close()

    def answer(self, path: str) -> tuple[int, str, bytes]:
        if path == "/metrics":
            with self.lock:
                return 200, CONTENT_TYPE_LATEST, generate_latest(self.registry)
        if path == "/healthz":
            with self.lock:
                last = self.status.last_round_unix
            since = time.time() - (last if last is not None else self.started)
            healthy = since <= 3 * max(self.interval_s, 1.0)
            text = f"{'ok' if healthy else 'stale'}: last round {since:.1f}s ago\n"
            return (200 if healthy else 503), "text/plain; charset=utf-8", text.encode()
        if path == "/decision":
            with self.lock:
                row = self.status.decision_row
            return 200, "application/json", (json.dumps(row, sort_keys=True) + "\n").encode()
        if path == "/forecast":
            with self.lock:
                rows = [f.as_dict() for f in self.status.forecasts]
            return 200, "application/json", (json.dumps(rows, sort_keys=True) + "\n").encode()
        return 404, "text/plain; charset=utf-8", b"not found: /metrics, /healthz, /decision, /forecast\n"
