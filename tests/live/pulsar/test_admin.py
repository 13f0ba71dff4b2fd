"""The admin REST client's failures, each a `PulsarError` with one line, never an exception.

The 401, 403, 404 and unreachable cases run against the real broker (test_collect_real.py). Here,
against small HTTP servers on loopback: the faults a real broker cannot be made to show on demand
(an answer that is not JSON or is too large, an answer that never comes, a server error, a peer that
does not speak TLS), and the settings' own checks.
"""

from __future__ import annotations

import http.server
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from quotaplane.core.errors import ConfigError
from quotaplane.live.pulsar.admin import AdminSettings, PulsarAdmin
from quotaplane.live.pulsar.model import PulsarError


@contextmanager
def serving(status: int, body: bytes) -> Iterator[tuple[str, list[dict[str, str]]]]:
    """An HTTP server answering every GET with `status` and `body`; the request headers it saw."""
    seen: list[dict[str, str]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(dict(self.headers))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def error_of(value: object) -> PulsarError:
    assert isinstance(value, PulsarError), value
    assert "\n" not in value.line()
    return value


def test_a_json_answer_with_the_token() -> None:
    with serving(200, b'["persistent://public/default/a"]') as (url, seen):
        admin = PulsarAdmin(AdminSettings(url, token="tok"))
        assert admin.topics("public/default") == ["persistent://public/default/a"]
    assert seen[0]["Authorization"] == "Bearer tok"


def test_an_answer_that_is_not_json() -> None:
    with serving(200, b"<html>proxy login</html>") as (url, _):
        error = error_of(PulsarAdmin(AdminSettings(url)).topic_stats("persistent://public/default/a"))
    assert error.reason == "MALFORMED_ANSWER" and error.where == "topic persistent://public/default/a"
    assert error.message.startswith("not JSON")


def test_an_answer_too_large() -> None:
    with serving(200, b"[" + b"1," * 600 + b"1]") as (url, _):
        error = error_of(PulsarAdmin(AdminSettings(url, max_answer_bytes=1000)).topics("public/default"))
    assert (error.reason, error.message) == ("MALFORMED_ANSWER", "answer larger than 1000 bytes")


def test_a_server_error_keeps_the_brokers_reason() -> None:
    with serving(500, b'{"reason": "Failed to get stats: ledger closed"}') as (url, _):
        error = error_of(PulsarAdmin(AdminSettings(url)).namespace_backlog_quotas("public/default"))
    assert error.line() == ("HTTP_ERROR: namespace public/default: HTTP 500: "
                            "Failed to get stats: ledger closed")


def test_an_answer_that_never_comes_is_a_timeout() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        port = silent.getsockname()[1]
        start = time.monotonic()
        admin = PulsarAdmin(AdminSettings(f"http://127.0.0.1:{port}", timeout_s=0.5))
        error = error_of(admin.broker_configuration())
    assert error.reason == "TIMEOUT" and "within 0.5 s" in error.message
    assert time.monotonic() - start < 5


def test_https_to_a_peer_without_tls() -> None:
    with serving(200, b"[]") as (url, _):
        admin = PulsarAdmin(AdminSettings(url.replace("http:", "https:"), timeout_s=2))
        error = error_of(admin.topics("a/b"))
    assert error.reason == "TLS_ERROR"


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"url": "pulsar://127.0.0.1:6650"}, "--pulsar-admin=pulsar://127.0.0.1:6650: must be an http:// or https://"),
    ({"url": "http://h:8080", "timeout_s": 0}, "--pulsar-timeout=0: must be a number of seconds > 0"),
    ({"url": "https://h:8443", "tls_cert_file": "c.pem"},
     "--pulsar-tls-key-file=(missing): a client certificate"),
])
def test_settings_are_checked(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        AdminSettings(**kwargs)  # type: ignore[arg-type]
    assert str(raised.value).startswith(message)
