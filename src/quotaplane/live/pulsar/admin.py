"""A Pulsar admin REST client over the standard library: every call answers a value or a `PulsarError`.

The paths are Pulsar's admin API v2 (upstream `pulsar-broker` `admin/v2/PersistentTopics`,
`Namespaces`, `Brokers`):

| call | GET |
|---|---|
| `topics(ns)` | `/admin/v2/persistent/{tenant}/{ns}` (every persistent topic, partitions included) |
| `partitioned_topics(ns)` | `/admin/v2/persistent/{tenant}/{ns}/partitioned` |
| `namespace_backlog_quotas(ns)` | `/admin/v2/namespaces/{tenant}/{ns}/backlogQuotaMap` |
| `topic_stats(topic)` | `/admin/v2/persistent/{tenant}/{ns}/{topic}/stats?` + `STATS_QUERY` |
| `internal_stats(topic)` | `/admin/v2/persistent/{tenant}/{ns}/{topic}/internalStats` |
| `ledger_info(topic)` | `/admin/v2/persistent/{tenant}/{ns}/{topic}/internal-info` (ledger close times) |
| `topic_backlog_quotas(topic)` | `/admin/v2/persistent/{tenant}/{ns}/{topic}/backlogQuotaMap` (topic level) |
| `broker_configuration()` | `/admin/v2/brokers/configuration/runtime` |

A call that fails gives a `PulsarError`: `UNREACHABLE` (connection refused, no route, DNS),
`TIMEOUT` (no answer within `timeout_s`), `TLS_ERROR`, `UNAUTHORIZED` (401), `FORBIDDEN` (403),
`NOT_FOUND` (404; the collector names it `NAMESPACE_NOT_FOUND` or `TOPIC_NOT_FOUND`), `HTTP_ERROR`
(any other status), `MALFORMED_ANSWER` (not JSON, or larger than `max_answer_bytes`), `EXCEPTION`
(anything else, with its type). The broker's own `reason` is part of the message when it sent one.
"""

from __future__ import annotations

import json
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from quotaplane.core.errors import ConfigError
from quotaplane.live.pulsar.model import PulsarError

DEFAULT_TIMEOUT_S = 10.0
MAX_ANSWER_BYTES = 64 << 20  # a topic's stats are kilobytes; a peer cannot make a round hold more
STATS_QUERY = "getEarliestTimeInBacklog=true&subscriptionBacklogSize=true"

Opener = Callable[[urllib.request.Request, float], Any]


@dataclass(frozen=True)
class AdminSettings:
    """Where and how to reach the admin API.

    `url` is the web service (`http://host:8080` or `https://host:8443`); `token` a JSON web token sent
    as `Authorization: Bearer` (Pulsar's token authentication); `tls_ca_file` the certificates to trust
    (default: the system's), `tls_insecure` accepts any certificate (Pulsar's
    `tlsAllowInsecureConnection`), `tls_verify_hostname` false skips the name check
    (`tlsHostnameVerificationEnable=false`), `tls_cert_file` / `tls_key_file` a client certificate
    (TLS authentication).
    """

    url: str
    token: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    tls_ca_file: str | None = None
    tls_insecure: bool = False
    tls_verify_hostname: bool = True
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    max_answer_bytes: int = MAX_ANSWER_BYTES

    def __post_init__(self) -> None:
        parts = urllib.parse.urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError("--pulsar-admin", self.url,
                              "must be an http:// or https:// URL of the web service")
        if not self.timeout_s > 0:
            raise ConfigError("--pulsar-timeout", self.timeout_s, "must be a number of seconds > 0")
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            missing = "--pulsar-tls-key-file" if self.tls_key_file is None else "--pulsar-tls-cert-file"
            raise ConfigError(missing,
                              "(missing)", "a client certificate needs both its certificate and its key")


def tls_context(settings: AdminSettings) -> ssl.SSLContext | None:
    """The TLS context of an https URL (None for http)."""
    if not settings.url.startswith("https:"):
        return None
    context = ssl.create_default_context(cafile=settings.tls_ca_file)
    if settings.tls_insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif not settings.tls_verify_hostname:
        context.check_hostname = False
    if settings.tls_cert_file is not None:
        context.load_cert_chain(settings.tls_cert_file, settings.tls_key_file)
    return context


def topic_path(topic: str) -> str:
    """`persistent://t/ns/name` as the admin path `persistent/t/ns/name` (each part URL-encoded)."""
    _, _, rest = topic.partition("://")
    return "persistent/" + "/".join(urllib.parse.quote(part, safe="") for part in rest.split("/"))


def namespace_path(namespace: str) -> str:
    return "/".join(urllib.parse.quote(part, safe="") for part in namespace.split("/"))


def _broker_reason(body: bytes) -> str:
    """The `reason` of Pulsar's error answer (`{"reason": ...}`), else the start of the body."""
    text = body[:2000].decode("utf-8", "replace")
    try:
        reason = json.loads(text).get("reason")
    except (ValueError, AttributeError):
        reason = None
    return str(reason) if reason else (" ".join(text.split())[:200] or "(no body)")


_STATUS_REASON = {401: "UNAUTHORIZED", 403: "FORBIDDEN", 404: "NOT_FOUND"}


class PulsarAdmin:
    """The admin calls the collector makes; `opener(request, timeout)` is `urllib`'s unless given."""

    def __init__(self, settings: AdminSettings, opener: Opener | None = None) -> None:
        self.settings = settings
        self._base = settings.url.rstrip("/")
        if opener is None:
            context = tls_context(settings)

            def opener(request: urllib.request.Request, timeout: float) -> Any:
                return urllib.request.urlopen(request, timeout=timeout, context=context)

        self._open = opener

    def get(self, path: str, where: str) -> Any | PulsarError:
        """The decoded JSON answer of `GET {url}/{path}`, or the error."""
        headers = {"Accept": "application/json", "User-Agent": "quotaplane"}
        if self.settings.token:
            headers["Authorization"] = f"Bearer {self.settings.token}"
        request = urllib.request.Request(f"{self._base}/{path}", headers=headers, method="GET")
        try:
            with self._open(request, self.settings.timeout_s) as response:
                body = response.read(self.settings.max_answer_bytes + 1)
        except urllib.error.HTTPError as exc:
            reason = _STATUS_REASON.get(exc.code, "HTTP_ERROR")
            try:
                detail = _broker_reason(exc.read())
            except Exception:  # a body that cannot be read says nothing more than its status
                detail = "(no body)"
            return PulsarError(reason, where, f"HTTP {exc.code}: {detail}")
        except urllib.error.URLError as exc:
            return self._transport_error(exc.reason, where)
        except (TimeoutError, OSError) as exc:
            return self._transport_error(exc, where)
        except Exception as exc:  # nothing a broker does may escape a round
            return PulsarError("EXCEPTION", where, f"{type(exc).__name__}: {exc}")
        if len(body) > self.settings.max_answer_bytes:
            return PulsarError("MALFORMED_ANSWER", where,
                               f"answer larger than {self.settings.max_answer_bytes} bytes")
        try:
            return json.loads(body)
        except ValueError as exc:
            return PulsarError("MALFORMED_ANSWER", where, f"not JSON ({exc})")

    def _transport_error(self, cause: object, where: str) -> PulsarError:
        if isinstance(cause, TimeoutError | socket.timeout):
            return PulsarError("TIMEOUT", where,
                               f"no answer from {self._base} within {self.settings.timeout_s:g} s")
        if isinstance(cause, ssl.SSLError | ssl.CertificateError):
            return PulsarError("TLS_ERROR", where, f"{self._base}: {cause}")
        return PulsarError("UNREACHABLE", where, f"{self._base}: {cause}")

    # --- the calls ---------------------------------------------------------------------------------

    def topics(self, namespace: str) -> Any | PulsarError:
        return self.get(f"admin/v2/persistent/{namespace_path(namespace)}", f"namespace {namespace}")

    def partitioned_topics(self, namespace: str) -> Any | PulsarError:
        return self.get(f"admin/v2/persistent/{namespace_path(namespace)}/partitioned",
                        f"namespace {namespace}")

    def namespace_backlog_quotas(self, namespace: str) -> Any | PulsarError:
        return self.get(f"admin/v2/namespaces/{namespace_path(namespace)}/backlogQuotaMap",
                        f"namespace {namespace}")

    def topic_stats(self, topic: str) -> Any | PulsarError:
        return self.get(f"admin/v2/{topic_path(topic)}/stats?{STATS_QUERY}", f"topic {topic}")

    def internal_stats(self, topic: str) -> Any | PulsarError:
        return self.get(f"admin/v2/{topic_path(topic)}/internalStats", f"topic {topic}")

    def ledger_info(self, topic: str) -> Any | PulsarError:
        return self.get(f"admin/v2/{topic_path(topic)}/internal-info", f"topic {topic}")

    def topic_backlog_quotas(self, topic: str) -> Any | PulsarError:
        return self.get(f"admin/v2/{topic_path(topic)}/backlogQuotaMap", f"topic {topic}")

    def broker_configuration(self) -> Any | PulsarError:
        return self.get("admin/v2/brokers/configuration/runtime", "broker configuration")
