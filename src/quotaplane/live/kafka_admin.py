"""`ClusterAdmin` over kafka-python's admin client (pinned: its network layer is used directly).

kafka-python 3.0 has DescribeCluster and DescribeLogDirs v4+ (KIP-827 total and usable bytes) in its
admin client and the DescribeClientQuotas / AlterClientQuotas (KIP-546) messages in
`kafka.protocol.admin`; confluent-kafka exposes neither log dir sizes nor client quotas. The requests
are sent through the admin client's connection manager (as its own admin methods do), each bounded
by `timeout_s`:

- DescribeLogDirs goes to every broker at once (null topic list: every log dir with its volume sizes
  and the size of every partition replica in it, `quotaplane.live.log_dirs`) and needs v4 (Kafka
  3.3+); one broker's failure is that broker's `LogDir.error`, never an exception;
- a cluster-wide request (DescribeCluster, DescribeClientQuotas, AlterClientQuotas) that gets no
  answer from one broker is sent to a second one (so it takes at most 2 x `timeout_s`), preferring
  brokers that have not just timed out: one stuck broker does not fail a round;
- `--command-config` properties carry Kafka's client names and are mapped to kafka-python's options
  (`client_options`); one the library cannot honour is a `ConfigError` naming it.

The library's own log records duplicate what the adapter reports, so its `kafka` logger is set to
CRITICAL unless a level was configured for it.

Over 400 lines: the `--command-config` mapping belongs with the one client library it maps to.
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
import socket
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

import kafka.errors as kerrors
from kafka.admin import KafkaAdminClient
from kafka.protocol.admin import (
    AlterClientQuotasRequest,
    DescribeClientQuotasRequest,
    DescribeClusterRequest,
    DescribeLogDirsRequest,
)
from kafka.protocol.metadata import MetadataRequest

from quotaplane.core.errors import ConfigError, ConfigErrors
from quotaplane.live.admin import DEFAULT_ENTITY, AdminError, LogDir, QuotaAlteration, QuotaEntity
from quotaplane.live.log_dirs import broker_failure as _broker_failure
from quotaplane.live.log_dirs import broker_log_dirs
from quotaplane.live.log_dirs import error_text as _error_text

T = TypeVar("T")
USER, CLIENT_ID = "user", "client-id"
LOG_DIRS_MIN_VERSION = 4  # KIP-827: TotalBytes / UsableBytes
_TIMEOUTS = (kerrors.KafkaTimeoutError, kerrors.RequestTimedOutError)
# No answer from that broker (as opposed to an answer carrying an error code): try another one.
_UNREACHABLE = (*_TIMEOUTS, kerrors.KafkaConnectionError, kerrors.NodeNotReadyError,
                kerrors.UnknownBrokerIdError, kerrors.Cancelled)
_AUTH = (kerrors.SaslAuthenticationFailedError, kerrors.AuthorizationError)

# --command-config: Kafka client property -> kafka-python option, for the plain ones.
_INT_OPTIONS = {
    "retry.backoff.ms": "retry_backoff_ms", "reconnect.backoff.ms": "reconnect_backoff_ms",
    "reconnect.backoff.max.ms": "reconnect_backoff_max_ms",
    "connections.max.idle.ms": "connections_max_idle_ms", "metadata.max.age.ms": "metadata_max_age_ms",
    "receive.buffer.bytes": "receive_buffer_bytes", "send.buffer.bytes": "send_buffer_bytes",
}
_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_MECHANISMS = {"PLAIN": "PlainLoginModule", "SCRAM-SHA-256": "ScramLoginModule",
               "SCRAM-SHA-512": "ScramLoginModule"}
_HANDLED = {"security.protocol", "sasl.mechanism", "sasl.jaas.config", "sasl.username", "sasl.password",
            "ssl.truststore.type", "ssl.truststore.location", "ssl.keystore.type",
            "ssl.keystore.location", "ssl.key.password", "ssl.endpoint.identification.algorithm",
            "client.id", "client.dns.lookup", *_INT_OPTIONS}
_JAAS = re.compile(r'^\s*([\w.$]+)\s+(required|requisite|sufficient|optional)((?:\s+[\w.]+\s*=\s*'
                   r'(?:"(?:[^"\\]|\\.)*"|[^\s;"]+))*)\s*;?\s*$')
_JAAS_OPTION = re.compile(r'([\w.]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')


def _shown(key: str, value: str) -> str:
    return "<hidden>" if "password" in key or key == "sasl.jaas.config" else value


def client_options(properties: Mapping[str, str]) -> dict[str, Any]:
    """kafka-python options for the `--command-config` properties (Kafka's client names).

    Supported: `security.protocol`; `sasl.mechanism` PLAIN / SCRAM-SHA-256 / SCRAM-SHA-512 with the
    credentials of `sasl.jaas.config` (Kafka's `PlainLoginModule` / `ScramLoginModule`) or of
    `sasl.username` + `sasl.password`; PEM trust and key stores (`ssl.truststore.type=PEM` +
    `ssl.truststore.location`, `ssl.keystore.type=PEM` + `ssl.keystore.location` holding the
    certificate chain and the key, `ssl.key.password`); `ssl.endpoint.identification.algorithm`;
    `client.id`, `client.dns.lookup` and the backoff / buffer / idle / metadata-age options.
    Anything else (JKS or PKCS12 stores, GSSAPI, OAUTHBEARER, timeouts, which the service sets) is a
    `ConfigError` naming the property; several are reported together (`ConfigErrors`).
    """
    props = {k.strip(): v.strip() for k, v in properties.items()}
    errors: list[ConfigError] = []
    out: dict[str, Any] = {}

    def bad(key: str, rule: str, hint: str | None = None) -> None:
        errors.append(ConfigError(key, _shown(key, props.get(key, "")), rule, hint))

    for key in sorted(set(props) - _HANDLED):
        hint = ("quotaplane bounds every request by its own timeout" if key.endswith("timeout.ms")
                else "give the brokers with --bootstrap-servers" if key == "bootstrap.servers" else None)
        bad(key, "not supported by quotaplane's Kafka client (kafka-python)", hint)
    for key, option in _INT_OPTIONS.items():
        if key in props:
            if re.fullmatch(r"\d+", props[key]):
                out[option] = int(props[key])
            else:
                bad(key, "must be a whole number >= 0")
    if "client.id" in props:
        out["client_id"] = props["client.id"]
    if "client.dns.lookup" in props:
        if props["client.dns.lookup"] in ("use_all_dns_ips", "resolve_canonical_bootstrap_servers_only"):
            out["client_dns_lookup"] = props["client.dns.lookup"]
        else:
            bad("client.dns.lookup", "must be use_all_dns_ips or resolve_canonical_bootstrap_servers_only")

    protocol = props.get("security.protocol", "PLAINTEXT").upper()
    if protocol not in _PROTOCOLS:
        bad("security.protocol", f"must be one of {', '.join(_PROTOCOLS)}")
    out["security_protocol"] = protocol
    sasl_keys = [k for k in props if k.startswith("sasl.") and k in _HANDLED]
    if protocol.startswith("SASL_"):
        _sasl_options(props, out, bad)
    elif sasl_keys:
        for key in sasl_keys:
            bad(key, f"has no effect with security.protocol={protocol}", "use SASL_PLAINTEXT or SASL_SSL")
    ssl_keys = [k for k in props if k.startswith("ssl.") and k in _HANDLED]
    if protocol.endswith("SSL"):
        _ssl_options(props, out, bad)
    elif ssl_keys:
        for key in ssl_keys:
            bad(key, f"has no effect with security.protocol={protocol}", "use SSL or SASL_SSL")
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ConfigErrors(errors)
    return out


def _sasl_options(props: Mapping[str, str], out: dict[str, Any],
                  bad: Callable[[str, str, str | None], None]) -> None:
    mechanism = props.get("sasl.mechanism", "").upper()
    if mechanism not in _MECHANISMS:
        bad("sasl.mechanism", f"must be one of {', '.join(_MECHANISMS)}",
            "GSSAPI (Kafka's default) and OAUTHBEARER are not supported")
        return
    out["sasl_mechanism"] = mechanism
    username, password = props.get("sasl.username"), props.get("sasl.password")
    jaas = props.get("sasl.jaas.config")
    if jaas is not None:
        match = _JAAS.match(jaas)
        module = match.group(1).rsplit(".", 1)[-1] if match else None
        if match is None or module != _MECHANISMS[mechanism]:
            bad("sasl.jaas.config", f"must be `{_MECHANISMS[mechanism]} required username=\"...\" "
                f"password=\"...\";` for sasl.mechanism={mechanism}", None)
            return
        options = {m.group(1): (m.group(2) if m.group(2) is not None else m.group(3))
                   for m in _JAAS_OPTION.finditer(match.group(3))}
        username, password = _unescape(options.get("username")), _unescape(options.get("password"))
    if not username or password is None:
        bad("sasl.jaas.config" if jaas is not None else "sasl.username",
            f"security.protocol={out['security_protocol']} needs a username and a password",
            "in sasl.jaas.config, or sasl.username and sasl.password")
        return
    out["sasl_plain_username"], out["sasl_plain_password"] = username, password


def _unescape(text: str | None) -> str | None:
    return re.sub(r"\\(.)", r"\1", text) if text is not None else None


def _ssl_options(props: Mapping[str, str], out: dict[str, Any],
                 bad: Callable[[str, str, str | None], None]) -> None:
    for store, option in (("truststore", "ssl_cafile"), ("keystore", "ssl_certfile")):
        location = props.get(f"ssl.{store}.location")
        kind = props.get(f"ssl.{store}.type", "JKS").upper()
        if location is None:
            continue
        if kind != "PEM":
            bad(f"ssl.{store}.type", f"{kind} {store}s are not supported (kafka-python reads PEM files)",
                f"convert it to PEM and set ssl.{store}.type=PEM")
        else:
            out[option] = location
    if "ssl.key.password" in props:
        out["ssl_password"] = props["ssl.key.password"]
    algorithm = props.get("ssl.endpoint.identification.algorithm")
    if algorithm is not None:
        if algorithm.lower() not in ("", "https"):
            bad("ssl.endpoint.identification.algorithm", "must be https or empty")
        out["ssl_check_hostname"] = algorithm.lower() == "https"


def check_bootstrap(servers: str) -> list[tuple[str, int]]:
    """The `host:port` pairs of `--bootstrap-servers`; `ConfigError` for a malformed list or when no
    host resolves (Kafka `ClientUtils.parseAndValidateAddresses`)."""
    pairs: list[tuple[str, int]] = []
    for item in (s.strip() for s in servers.split(",")):
        item = re.sub(r"^[A-Za-z_]+://", "", item)
        match = re.fullmatch(r"\[([0-9A-Fa-f:.]+)\]:(\d+)|([^\s:\[\]]+):(\d+)", item)
        port = int(match.group(2) or match.group(4)) if match else 0
        if match is None or not 0 < port < 65536:
            raise ConfigError("--bootstrap-servers", servers, f"{item or '(empty)'} is not host:port")
        pairs.append((match.group(1) or match.group(3), port))
    unresolved = []
    for host, port in pairs:
        try:
            socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError):
            unresolved.append(host)
    if len(unresolved) == len(pairs):
        raise ConfigError("--bootstrap-servers", servers, f"unknown host {', '.join(unresolved)}",
                          "no bootstrap server resolves")
    return pairs


def _failure_text(exc: BaseException) -> tuple[str, str]:
    """(reason, message) for an exception of the client library."""
    if isinstance(exc, _TIMEOUTS):
        return "TIMEOUT", "no answer in time"
    if isinstance(exc, kerrors.IncompatibleBrokerVersion):
        return "UNSUPPORTED_VERSION", str(exc)
    if isinstance(exc, kerrors.BrokerResponseError) and exc.message:
        return exc.message, exc.description or str(exc)
    if isinstance(exc, (kerrors.KafkaConnectionError, kerrors.NodeNotReadyError, kerrors.Cancelled)):
        return "BROKER_NOT_AVAILABLE", str(exc) or type(exc).__name__
    if isinstance(exc, kerrors.UnknownBrokerIdError):
        return "BROKER_NOT_AVAILABLE", "not in the cluster metadata"
    return "EXCEPTION", f"{type(exc).__name__}: {exc}"


def _describe(exc: BaseException) -> str:
    """`CODE: message` for a broker error, `Type: message` for another exception."""
    text = str(exc.args[0]) if exc.args else ""
    text = text.removeprefix(f"{type(exc).__name__}: ")
    if isinstance(exc, kerrors.BrokerResponseError) and exc.message:
        return f"{exc.message}: {text or exc.description}"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _wire_entity(entity: QuotaEntity) -> list[Any]:
    cls = AlterClientQuotasRequest.EntryData.EntityData
    return [cls(entity_type=kind, entity_name=None if name == DEFAULT_ENTITY else name)
            for kind, name in ((USER, entity[0]), (CLIENT_ID, entity[1])) if name is not None]


def _entity(components: Sequence[Any]) -> QuotaEntity | None:
    """`(user, client_id)` of a wire entity; None for other entity types (ip)."""
    names: dict[str, str] = {}
    for c in components:
        if c.entity_type not in (USER, CLIENT_ID) or c.entity_type in names:
            return None
        names[c.entity_type] = DEFAULT_ENTITY if c.entity_name is None else c.entity_name
    return (names.get(USER), names.get(CLIENT_ID)) if names else None


def _quiet_library_logging() -> None:
    library = logging.getLogger("kafka")
    if library.level == logging.NOTSET:
        library.setLevel(logging.CRITICAL)


class KafkaClusterAdmin:
    """`ClusterAdmin` on a running Kafka cluster (module docstring: timeouts, retries, properties).

    Construction connects (bootstrap); a bad `--bootstrap-servers` or `--command-config`, a cluster
    that does not answer within `timeout_s`, or failed authentication is a `ConfigError`."""

    def __init__(self, bootstrap_servers: str, properties: Mapping[str, str], timeout_s: float) -> None:
        options = client_options(properties)
        check_bootstrap(bootstrap_servers)
        if not timeout_s > 0 or not math.isfinite(timeout_s):
            raise ConfigError("--timeout", timeout_s, "must be a positive number of seconds")
        _quiet_library_logging()
        self.timeout_s = timeout_s
        self._timeout_ms = max(1, int(timeout_s * 1000))
        options.setdefault("client_id", "quotaplane")
        options.update(bootstrap_servers=bootstrap_servers, request_timeout_ms=self._timeout_ms,
                       bootstrap_timeout_ms=self._timeout_ms)
        self._slow: set[int] = set()  # brokers whose last request timed out
        self._closed = False
        client = _connect(options, timeout_s)
        self._client = client
        self._manager = client._manager

    # -- plumbing ------------------------------------------------------------------------------

    def _run(self, reason: str, what: str, coro: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run `coro` on the client's IO thread, bounded even if that thread stalls; any failure is
        an `AdminError` (`reason` unless the coroutine raised its own)."""
        if self._closed:
            raise AdminError(reason, f"{what}: the admin client is closed")
        future = self._manager.call_soon(coro, *args)
        done = threading.Event()
        future.add_both(lambda _: done.set())
        if not done.wait(2 * self.timeout_s + 5):
            raise AdminError("TIMEOUT", f"{what}: the Kafka client did not finish in time")
        exc = future.exception
        if isinstance(exc, AdminError):
            raise exc
        if exc is not None:
            code, message = _failure_text(exc)
            raise AdminError("TIMEOUT" if code == "TIMEOUT" else reason, f"{what}: {code}: {message}")
        return future.value  # type: ignore[no-any-return]

    async def _send(self, request: Any, node_id: int) -> Any:
        """One request to one broker, answered within the timeout or failed."""
        try:
            future = self._manager.send(request, node_id=node_id, request_timeout_ms=self._timeout_ms)
            response = await self._manager.wait_for(future, self._timeout_ms)
        except _TIMEOUTS:
            self._slow.add(node_id)
            self._manager.close(node_id)  # as Kafka's admin client does: the next request reconnects
            raise
        self._slow.discard(node_id)
        return response

    def _candidates(self) -> list[int]:
        """Brokers for a cluster-wide request: connected first, those that just timed out last."""
        conns = self._manager._conns
        ids = [b.node_id for b in self._manager.cluster.brokers()]
        ready = [i for i in ids if i in conns and conns[i].connected and not conns[i].paused]
        return sorted(ids, key=lambda i: (i in self._slow, i not in ready, self._manager.connection_delay(i)))

    async def _send_any(self, make_request: Callable[[], Any], reason: str, what: str) -> Any:
        """A cluster-wide request to one broker, or to a second when the first does not answer."""
        failures: list[str] = []
        timed_out = False
        for node_id in self._candidates()[:2]:
            try:
                return await self._send(make_request(), node_id)
            except _UNREACHABLE as exc:
                code, message = _failure_text(exc)
                failures.append(f"broker {node_id}: {code} ({message})")
                timed_out = code == "TIMEOUT"
            except kerrors.KafkaError as exc:
                code, message = _failure_text(exc)
                raise AdminError(reason, f"{what} to broker {node_id}: {code}: {message}") from None
        if not failures:
            raise AdminError(reason, f"{what}: no broker known to send it to")
        raise AdminError("TIMEOUT" if timed_out else reason, f"{what}: " + "; ".join(failures))

    # -- ClusterAdmin --------------------------------------------------------------------------

    def active_brokers(self) -> list[int]:
        async def call() -> list[int]:
            response = await self._send_any(
                lambda: DescribeClusterRequest(include_cluster_authorized_operations=False,
                                               include_fenced_brokers=False),
                "DESCRIBE_CLUSTER_ERROR", "DescribeCluster")
            if response.error_code:
                raise AdminError("DESCRIBE_CLUSTER_ERROR", _error_text(response.error_code,
                                                                       response.error_message))
            return sorted({b.broker_id for b in response.brokers if not getattr(b, "is_fenced", False)})
        return self._run("DESCRIBE_CLUSTER_ERROR", "DescribeCluster", call)

    def log_dirs(self, broker_ids: Sequence[int]) -> list[LogDir]:
        brokers = list(dict.fromkeys(broker_ids))
        return self._run("DESCRIBE_LOG_DIR_ERROR", "DescribeLogDirs", self._log_dirs, brokers)

    async def _leaders(self) -> dict[tuple[str, int], int]:
        """The leader of every partition (Metadata of all topics, one broker); empty when no broker
        answers, so the replicas' leader flags are unknown (None) rather than the round failing."""
        request = MetadataRequest(topics=MetadataRequest.ALL_TOPICS, allow_auto_topic_creation=False,
                                  include_cluster_authorized_operations=False,
                                  include_topic_authorized_operations=False)
        try:
            response = await self._send_any(lambda: request, "METADATA_ERROR", "Metadata")
        except (AdminError, kerrors.KafkaError):
            return {}
        return {(t.name, p.partition_index): p.leader_id
                for t in response.topics or () if not t.error_code
                for p in t.partitions or () if not p.error_code}

    async def _log_dirs(self, broker_ids: list[int]) -> list[LogDir]:
        known = {b.node_id for b in self._manager.cluster.brokers()}
        if not set(broker_ids) <= known:  # a broker that joined since the last metadata refresh
            with contextlib.suppress(kerrors.KafkaError):
                refresh = self._manager.call_soon(self._manager.cluster.refresh_metadata)
                await self._manager.wait_for(refresh, self._timeout_ms / 2)
        leaders = await self._leaders()
        pending = {broker: self._manager.call_soon(
            self._send, DescribeLogDirsRequest(topics=None, min_version=LOG_DIRS_MIN_VERSION), broker)
            for broker in broker_ids}
        out: list[LogDir] = []
        for broker, future in pending.items():
            # each `_send` ends within the timeout by itself, all at once, and closes the connection
            # of a broker that did not answer before it ends: a deadline of this loop's own could
            # end first, and the next request would go out on that connection before it is closed
            try:
                response = await future
            except kerrors.IncompatibleBrokerVersion:
                out.append(_broker_failure(broker, "UNSUPPORTED_VERSION",
                                           "no DescribeLogDirs v4 (KIP-827 volume sizes, Kafka 3.3+)"))
            except Exception as exc:
                out.append(_broker_failure(broker, *_failure_text(exc)))
            else:
                out.extend(broker_log_dirs(broker, response, lambda t, p: leaders.get((t, p))))
        return out

    def client_quotas(self) -> dict[QuotaEntity, dict[str, float]]:
        async def call() -> dict[QuotaEntity, dict[str, float]]:
            response = await self._send_any(lambda: DescribeClientQuotasRequest(components=[], strict=False),
                                            "DESCRIBE_QUOTAS_ERROR", "DescribeClientQuotas")
            if response.error_code:
                raise AdminError("DESCRIBE_QUOTAS_ERROR", _error_text(response.error_code,
                                                                      response.error_message))
            out: dict[QuotaEntity, dict[str, float]] = {}
            for entry in response.entries or ():
                entity = _entity(entry.entity)
                if entity is not None:
                    out.setdefault(entity, {}).update({v.key: float(v.value) for v in entry.values})
            return out
        return self._run("DESCRIBE_QUOTAS_ERROR", "DescribeClientQuotas", call)

    def alter_client_quotas(self, alterations: Sequence[QuotaAlteration]) -> dict[QuotaEntity, str | None]:
        ops: dict[QuotaEntity, dict[str, float | None]] = {}
        results: dict[QuotaEntity, str | None] = {}
        for a in alterations:
            if a.entity == (None, None):
                results[a.entity] = "INVALID_REQUEST: an entity needs a user or a client id"
            elif a.value is not None and not math.isfinite(a.value):
                results[a.entity] = f"INVALID_REQUEST: {a.key}={a.value} is not a finite number"
            else:
                ops.setdefault(a.entity, {})[a.key] = a.value  # the last alteration of a key wins
        for entity in results:
            ops.pop(entity, None)
        if not ops:
            return results
        entry_cls, op_cls = AlterClientQuotasRequest.EntryData, AlterClientQuotasRequest.EntryData.OpData

        def request() -> Any:
            return AlterClientQuotasRequest(validate_only=False, entries=[
                entry_cls(entity=_wire_entity(entity), ops=[
                    op_cls(key=key, value=0.0 if value is None else float(value), remove=value is None)
                    for key, value in keys.items()])
                for entity, keys in ops.items()])

        async def call() -> Any:
            return await self._send_any(request, "ALTER_QUOTAS_ERROR", "AlterClientQuotas")
        response = self._run("ALTER_QUOTAS_ERROR", "AlterClientQuotas", call)
        answered = {_entity(e.entity): e for e in response.entries}
        for entity in ops:
            entry = answered.get(entity)
            results[entity] = ("NO_ANSWER: the broker did not answer for this entity" if entry is None
                               else _error_text(entry.error_code, entry.error_message) if entry.error_code
                               else None)
        return results

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            _shutdown(self._client)


class _LastFailure(logging.Handler):
    """Keeps the last exception the library logged while bootstrapping (it retries until the
    timeout and then reports only that it timed out); a failed authentication stops the bootstrap
    at once, as it is fatal in Kafka's own clients."""

    def __init__(self, client: KafkaAdminClient) -> None:
        super().__init__(logging.WARNING)
        self.client = client
        self.error: BaseException | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if str(record.msg).startswith("Bootstrap failed"):  # the final timeout itself
            return
        args = record.args if isinstance(record.args, tuple) else ()
        self.error = next((a for a in args if isinstance(a, BaseException)), self.error)
        manager = getattr(self.client, "_manager", None)
        if isinstance(self.error, _AUTH) and manager is not None:
            manager.close()  # ends the bootstrap loop (it then raises its timeout error)


def _connect(options: dict[str, Any], timeout_s: float) -> KafkaAdminClient:
    """A bootstrapped admin client, or a `ConfigError` naming what to fix (one line)."""
    servers = options["bootstrap_servers"]
    manager_log = logging.getLogger("kafka.net.manager")
    saved = manager_log.level, manager_log.propagate
    client = KafkaAdminClient.__new__(KafkaAdminClient)
    last = _LastFailure(client)
    manager_log.addHandler(last)
    manager_log.setLevel(logging.WARNING)
    manager_log.propagate = logging.getLogger("kafka").isEnabledFor(logging.WARNING)
    try:
        client.__init__(**options)  # type: ignore[misc]  # on failure its IO thread must be stopped
        return client
    except Exception as exc:
        _shutdown(client)
        cause = exc if not isinstance(exc, _TIMEOUTS) or last.error is None else last.error
        if isinstance(cause, _AUTH):
            who = " ".join(str(options.get(k, "")) for k in ("security_protocol", "sasl_mechanism"))
            if options.get("sasl_plain_username"):
                who += f" user {options['sasl_plain_username']}"
            raise ConfigError("--command-config", who, f"authentication failed: {_describe(cause)}") from None
        if isinstance(exc, _TIMEOUTS):
            seen = f" (last error: {_describe(cause)})" if cause is not exc else ""
            raise ConfigError("--bootstrap-servers", servers,
                              f"no Kafka broker answered within {timeout_s:g} s{seen}",
                              "is a Kafka broker listening there, and does security.protocol match its "
                              "listener?") from None
        raise ConfigError("--bootstrap-servers", servers, f"cannot connect: {_describe(exc)}") from None
    finally:
        manager_log.removeHandler(last)
        manager_log.setLevel(saved[0])
        manager_log.propagate = saved[1]


def _shutdown(client: KafkaAdminClient) -> None:
    """Stop a (possibly half-constructed) admin client: its connections and its IO thread."""
    if getattr(client, "_closed", False):
        return
    client._closed = True
    for part, step in (("_metrics", "close"), ("_client", "close"), ("_net", "stop")):
        target = getattr(client, part, None)
        if target is not None:
            try:
                getattr(target, step)()
            except Exception:  # best effort: the rest must still be stopped
                continue
