"""A small HTTP server for a service's endpoints (`/metrics`, `/healthz`, ...): GET only, one thread
per request, answers from `answer(path)`."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from quotaplane.core.errors import ConfigError


class EndpointServer(ABC):
    """Listens on `host:port` (port 0: any free port, see `port`); `start()` serves in a daemon
    thread. A port that cannot be bound is a `ConfigError` naming `option`."""

    def __init__(self, host: str, port: int, option: str = "--metrics-port",
                 thread_name: str = "quotaplane-http") -> None:
        outer = self

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
            raise ConfigError(option, f"{host}:{port}", f"cannot listen: {exc.strerror}") from None
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name=thread_name, daemon=True)

    @abstractmethod
    def answer(self, path: str) -> tuple[int, str, bytes]:
        """The status code, content type and body for a GET of `path`."""

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def start(self) -> None:
        self.thread.start()

    def close(self) -> None:
        if self.thread.is_alive():  # shutdown() waits for a serve_forever that was never started
            self.server.shutdown()
        self.server.server_close()
