"""`/metrics` (Prometheus text) and `/healthz` of `quotaplane stream`."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from quotaplane.core.errors import ConfigError


class MetricsServer:
    def __init__(self, host: str, port: int, registry: CollectorRegistry, lock: threading.Lock) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                if path == "/metrics":
                    with lock:
                        code, kind, body = 200, CONTENT_TYPE_LATEST, generate_latest(registry)
                elif path == "/healthz":
                    code, kind, body = 200, "text/plain; charset=utf-8", b"ok\n"
                else:
                    code, kind, body = 404, "text/plain; charset=utf-8", b"not found: /metrics, /healthz\n"
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
        self.thread = threading.Thread(target=self.server.serve_forever, name="quotaplane-stream-http",
                                       daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def start(self) -> None:
        self.thread.start()

    def close(self) -> None:
        if self.thread.is_alive():
            self.server.shutdown()
        self.server.server_close()
