"""A loopback Kafka test cluster that speaks the wire protocol for the Admin APIs quotaplane uses.

No Kafka broker with these APIs can be installed here, so the tests run the real client library
against this one. Requests are decoded and responses encoded with kafka-python's own protocol classes
(`kafka.protocol`), so the bytes are the library's; the behaviour follows Kafka's request handlers:

- ApiVersions, Metadata (brokers only), DescribeCluster (KIP-700), DescribeLogDirs v1-v4 (v4 with
  KIP-827 total and usable bytes; a null topic list returns every partition replica of each log dir
  with its `partitionSize` and `isFutureKey`, a list only those named, an empty list none; an
  offline dir has its error code, no sizes and no partitions), DescribeClientQuotas and
  AlterClientQuotas (KIP-546, with `ClientQuotaControlManager`'s validation: known entity types and
  keys, whole numbers for the byte rates), SaslHandshake + SaslAuthenticate for PLAIN when
  `sasl_users` is given. Any other API closes the connection, as a broker does with a request it
  cannot parse.
- Every broker id has its own TCP listener on 127.0.0.1 (port 0); ONE thread serves them all (a
  selector loop), so a cluster costs one thread whatever it does, and `stop()` joins it.
- The state is scriptable while it runs (under `lock`): brokers, their log dirs, the quotas (the
  AlterClientQuotas it receives change them), and faults: a broker that accepts but never answers
  (`hang`, or only some APIs: `hang_apis`), an error code per log dir, a broker left out of
  Metadata/DescribeCluster (`listed=False`) or fenced, a broker that refuses service (`down`), a
  failing AlterClientQuotas (`fail_alter`, an error code per entity), older API versions
  (`api_versions`). `requests` records what each broker was asked.

Quota entities are `(user, client_id)` as in `quotaplane.live.admin` (`"<default>"`: the default).
Over 400 lines: the serving loop and the handlers of the APIs share the scripted state and its lock.
"""

from __future__ import annotations

import argparse
import contextlib
import selectors
import socket
import struct
import threading
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import kafka.errors as kerrors
from kafka.protocol.admin import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
)
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

HOST = "127.0.0.1"
GIB = 1 << 30
DEFAULT = "<default>"
Entity = tuple[str | None, str | None]
_REQUESTS = {cls.API_KEY: cls for cls in (
    ApiVersionsRequest, MetadataRequest, DescribeClusterRequest, DescribeLogDirsRequest,
    DescribeClientQuotasRequest, AlterClientQuotasRequest, SaslHandshakeRequest, SaslAuthenticateRequest)}
_RESPONSES = {cls.API_KEY: cls for cls in (
    ApiVersionsResponse, MetadataResponse, DescribeClusterResponse, DescribeLogDirsResponse,
    DescribeClientQuotasResponse, AlterClientQuotasResponse, SaslHandshakeResponse, SaslAuthenticateResponse)}
# What a Kafka 3.7 broker advertises for these APIs (name: (min, max)).
API_VERSIONS = {"ApiVersions": (0, 3), "Metadata": (0, 12), "DescribeCluster": (0, 1),
                "DescribeLogDirs": (1, 4), "DescribeClientQuotas": (0, 1), "AlterClientQuotas": (0, 1),
                "SaslHandshake": (0, 1), "SaslAuthenticate": (0, 2)}
_SASL_APIS = {"ApiVersions", "SaslHandshake", "SaslAuthenticate"}
# Kafka `QuotaConfig`: the client quota keys and whether the value must be a whole number.
QUOTA_KEYS = {"user": {"producer_byte_rate": True, "consumer_byte_rate": True,
                       "request_percentage": False, "controller_mutation_rate": False},
              "ip": {"connection_creation_rate": True}}
QUOTA_KEYS["client-id"] = QUOTA_KEYS["user"]


@dataclass
class FakePartition:
    """One partition replica in a log dir: its size (any int64, also a bad negative one) and whether
    it is the future replica of an AlterReplicaLogDirs move."""

    topic: str
    partition: int
    size_bytes: int
    future: bool = False
    offset_lag: int = 0


@dataclass
class FakeLogDir:
    """One log dir: its volume's sizes (None: not reported, -1 on the wire), its error code and the
    partition replicas in it."""

    path: str
    total_bytes: int | None = 100 * GIB
    usable_bytes: int | None = 60 * GIB
    error_code: int = 0
    partitions: list[FakePartition] = field(default_factory=list)


@dataclass
class FakeBroker:
    broker_id: int
    log_dirs: list[FakeLogDir]
    rack: str | None = None
    listed: bool = True  # in Metadata and DescribeCluster
    fenced: bool = False  # registered but fenced: not active (DescribeCluster v2 shows it as fenced)
    hang: bool = False  # accepts connections and reads requests, never answers
    hang_apis: set[str] = field(default_factory=set)  # API names it never answers
    down: bool = False  # refuses service: its connections are closed (within 0.1 s), new ones too
    log_dirs_error: int = 0  # DescribeLogDirs error code for the whole request (v3+)
    api_versions: dict[str, tuple[int, int]] = field(default_factory=dict)  # overrides of API_VERSIONS
    port: int = 0


def _wire(entity: Entity) -> frozenset[tuple[str, str | None]]:
    return frozenset((kind, None if name == DEFAULT else name)
                     for kind, name in (("user", entity[0]), ("client-id", entity[1])) if name is not None)


def _public(entity: frozenset[tuple[str, str | None]]) -> Entity:
    names = {kind: DEFAULT if name is None else name for kind, name in entity}
    return names.get("user"), names.get("client-id")


@dataclass
class _Conn:
    sock: socket.socket
    broker_id: int
    buffer: bytearray = field(default_factory=bytearray)
    authenticated: bool = False
    stuck: bool = False


class KafkaTestCluster:
    """Brokers on loopback listeners served by one thread (module docstring: APIs and faults)."""

    def __init__(self, broker_ids: Iterable[int] = (1, 2, 3), *, cluster_id: str = "quotaplane-test",
                 log_dirs: int = 1, sasl_users: Mapping[str, str] | None = None) -> None:
        self.cluster_id = cluster_id
        self.lock = threading.RLock()
        self.brokers: dict[int, FakeBroker] = {
            b: FakeBroker(b, [FakeLogDir(f"/var/lib/kafka/data-{i}") for i in range(log_dirs)])
            for b in broker_ids}
        self.quotas: dict[frozenset[tuple[str, str | None]], dict[str, float]] = {}
        self.alter_failures: dict[Entity, list[int | None]] = {}  # entity -> [error code, times left]
        self.describe_cluster_error = 0
        self.describe_quotas_error = 0
        self.sasl_users = dict(sasl_users) if sasl_users is not None else None
        self.requests: deque[tuple[int, str, int]] = deque(maxlen=10_000)
        self.errors: list[str] = []  # failures of the fake itself (tests assert there are none)
        self._listeners: dict[int, socket.socket] = {}
        self._conns: dict[int, _Conn] = {}
        self._selector: selectors.BaseSelector | None = None
        self._wake_r: socket.socket | None = None
        self._wake_w: socket.socket | None = None
        self._calls: deque[Callable[[], None]] = deque()
        self._thread: threading.Thread | None = None
        self._stopping = False

    # -- scripting -----------------------------------------------------------------------------

    def broker(self, broker_id: int) -> FakeBroker:
        return self.brokers[broker_id]

    @property
    def bootstrap_servers(self) -> str:
        with self.lock:
            return ",".join(f"{HOST}:{b.port}" for b in self.brokers.values() if b.listed and not b.down)

    def set_quota(self, entity: Entity, key: str, value: float | None) -> None:
        """Set (or, with None, remove) a quota value as an operator would."""
        with self.lock:
            values = self.quotas.setdefault(_wire(entity), {})
            if value is None:
                values.pop(key, None)
            else:
                values[key] = float(value)
            if not values:
                del self.quotas[_wire(entity)]

    def quota_values(self) -> dict[Entity, dict[str, float]]:
        """The user / client-id quotas now, as `(user, client_id) -> {key: value}`."""
        with self.lock:
            return {_public(e): dict(v) for e, v in self.quotas.items() if not any(k == "ip" for k, _ in e)}

    def fail_alter(self, entity: Entity, error_code: int, times: int | None = None) -> None:
        """AlterClientQuotas answers `error_code` for `entity` (and leaves it unchanged), `times`
        times or always."""
        with self.lock:
            self.alter_failures[entity] = [error_code, times]

    def requests_for(self, api: str) -> list[tuple[int, int]]:
        """(broker id, version) of every request of that API name received so far."""
        with self.lock:
            return [(b, v) for b, name, v in self.requests if name == api]

    def add_broker(self, broker_id: int, **fields: Any) -> FakeBroker:
        """A broker that joins (its listener starts at once when the cluster runs)."""
        with self.lock:
            broker = FakeBroker(broker_id, fields.pop("log_dirs", [FakeLogDir("/var/lib/kafka/data-0")]),
                                **fields)
            self.brokers[broker_id] = broker
        if self._thread is not None:
            self._listen(broker)
        return broker

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> KafkaTestCluster:
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        for broker in self.brokers.values():
            self._listen(broker)
        self._thread = threading.Thread(target=self._loop, name="kafka-test-cluster", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stopping = True
        self._wake()
        self._thread.join(timeout=10)
        if self._thread.is_alive():
            raise RuntimeError("the test cluster's thread did not stop")
        self._thread = None
        for sock in [*self._listeners.values(), *(c.sock for c in self._conns.values())]:
            sock.close()
        self._listeners.clear()
        self._conns.clear()
        assert self._selector is not None and self._wake_r is not None and self._wake_w is not None
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()

    def _wake(self) -> None:
        if self._wake_w is not None:
            self._wake_w.send(b"x")

    def __enter__(self) -> KafkaTestCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _listen(self, broker: FakeBroker) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, 0))
        sock.listen(16)
        sock.setblocking(False)
        broker.port = sock.getsockname()[1]

        def register() -> None:
            assert self._selector is not None
            self._listeners[broker.broker_id] = sock
            self._selector.register(sock, selectors.EVENT_READ, ("listen", broker.broker_id))
        self._calls.append(register)
        if self._thread is not None:
            self._wake()

    # -- the serving thread ----------------------------------------------------------------------

    def _loop(self) -> None:
        assert self._selector is not None
        while not self._stopping:
            while self._calls:
                self._calls.popleft()()
            for key, _ in self._selector.select(timeout=0.1):
                if key.data is None:
                    key.fileobj.recv(4096)  # type: ignore[union-attr]
                elif key.data[0] == "listen":
                    self._accept(key.fileobj, key.data[1])  # type: ignore[arg-type]
                elif key.data[1] in self._conns:
                    self._read(key.data[1])
            with self.lock:
                gone = [c for c in self._conns.values() if self.brokers[c.broker_id].down]
            for conn in gone:
                self._close(conn)

    def _accept(self, listener: socket.socket, broker_id: int) -> None:
        try:
            sock, _ = listener.accept()
        except OSError:
            return
        with self.lock:
            down = self.brokers[broker_id].down
        if down:
            sock.close()
            return
        sock.setblocking(True)
        sock.settimeout(2.0)
        conn = _Conn(sock, broker_id, authenticated=self.sasl_users is None)
        self._conns[sock.fileno()] = conn
        assert self._selector is not None
        self._selector.register(sock, selectors.EVENT_READ, ("conn", sock.fileno()))

    def _close(self, conn: _Conn) -> None:
        assert self._selector is not None
        self._conns.pop(conn.sock.fileno(), None)
        self._selector.unregister(conn.sock)
        conn.sock.close()

    def _read(self, fileno: int) -> None:
        conn = self._conns[fileno]
        try:
            data = conn.sock.recv(65536)
        except OSError:
            data = b""
        with self.lock:
            down = self.brokers[conn.broker_id].down
        if not data or down:
            self._close(conn)
            return
        conn.buffer += data
        while len(conn.buffer) >= 4:
            size = struct.unpack(">i", conn.buffer[:4])[0]
            if len(conn.buffer) < 4 + size:
                return
            frame, conn.buffer = bytes(conn.buffer[4:4 + size]), conn.buffer[4 + size:]
            try:
                reply = self._handle(conn, frame)
            except Exception:  # a bug of this fake: recorded for the test, the connection closed
                self.errors.append(f"broker {conn.broker_id}: {traceback.format_exc()}")
                reply = b""
            if reply is None:
                continue
            try:
                conn.sock.sendall(reply)
            except OSError:
                reply = b""
            if not reply:
                self._close(conn)
                return

    def _handle(self, conn: _Conn, frame: bytes) -> bytes | None:
        """The framed response, None for no answer (a hang), b"" to close the connection."""
        api_key, version, correlation_id = struct.unpack(">hhi", frame[:8])
        request_cls = _REQUESTS.get(api_key)
        with self.lock:
            broker = self.brokers[conn.broker_id]
            name = request_cls.name.removesuffix("Request") if request_cls else f"api-{api_key}"
            self.requests.append((conn.broker_id, name, version))
            if conn.stuck or broker.hang or name in broker.hang_apis:
                conn.stuck = True  # a broker answers a connection's requests in order: the rest wait too
                return None
            if request_cls is None or (not conn.authenticated and name not in _SASL_APIS):
                return b""
            supported = {**API_VERSIONS, **broker.api_versions}
            low, high = supported[name]
            if name == "ApiVersions":
                ok = low <= version <= high
                response = _api_versions(supported, version if ok else 0,
                                         0 if ok else kerrors.UnsupportedVersionError.errno)
            elif not low <= version <= high:
                return b""
            else:
                request = request_cls.decode(frame, version=version, header=True)
                response = getattr(self, f"_{_snake(name)}")(conn, broker, request, version)
        response.with_header(correlation_id=correlation_id)
        return bytes(response.encode(header=True, framed=True))

    # -- the APIs --------------------------------------------------------------------------------

    def _active(self) -> list[FakeBroker]:
        return [b for b in self.brokers.values() if b.listed and not b.fenced]

    def _controller(self) -> int:
        active = self._active()
        return active[0].broker_id if active else -1

    def _metadata(self, conn: _Conn, broker: FakeBroker, request: Any, version: int) -> Any:
        nodes = [MetadataResponse.MetadataResponseBroker(
            node_id=b.broker_id, host=HOST, port=b.port, rack=b.rack) for b in self._active()]
        return MetadataResponse(version=version, throttle_time_ms=0, brokers=nodes, topics=[],
                                cluster_id=self.cluster_id, controller_id=self._controller())

    def _describe_cluster(self, conn: _Conn, broker: FakeBroker, request: Any, version: int) -> Any:
        with_fenced = version >= 2 and request.include_fenced_brokers
        nodes = [DescribeClusterResponse.DescribeClusterBroker(
            broker_id=b.broker_id, host=HOST, port=b.port, rack=b.rack, is_fenced=b.fenced)
            for b in self.brokers.values() if b.listed and (with_fenced or not b.fenced)]
        return DescribeClusterResponse(
            version=version, throttle_time_ms=0, error_code=self.describe_cluster_error,
            error_message=None, endpoint_type=1, cluster_id=self.cluster_id,
            controller_id=self._controller(), brokers=nodes)

    def _describe_log_dirs(self, conn: _Conn, broker: FakeBroker, request: Any, version: int) -> Any:
        result = DescribeLogDirsResponse.DescribeLogDirsResult
        results = [] if broker.log_dirs_error and version >= 3 else [result(
            error_code=d.error_code, log_dir=d.path,
            topics=[] if d.error_code else _log_dir_topics(d.partitions, request.topics),
            total_bytes=-1 if d.error_code or d.total_bytes is None else d.total_bytes,
            usable_bytes=-1 if d.error_code or d.usable_bytes is None else d.usable_bytes)
            for d in broker.log_dirs]
        return DescribeLogDirsResponse(version=version, throttle_time_ms=0, error_code=broker.log_dirs_error,
                                       results=results)

    def _describe_client_quotas(self, conn: _Conn, broker: FakeBroker, request: Any, version: int) -> Any:
        entry = DescribeClientQuotasResponse.EntryData
        if self.describe_quotas_error:
            return DescribeClientQuotasResponse(version=version, throttle_time_ms=0, entries=None,
                                                error_code=self.describe_quotas_error, error_message=None)
        entries = [entry(entity=[entry.EntityData(entity_type=k, entity_name=n) for k, n in sorted(entity)],
                         values=[entry.ValueData(key=k, value=v) for k, v in values.items()])
                   for entity, values in self.quotas.items()
                   if _matches(entity, request.components, request.strict)]
        return DescribeClientQuotasResponse(version=version, throttle_time_ms=0, error_code=0,
                                            error_message=None, entries=entries)

    def _alter_client_quotas(self, conn: _Conn, broker: FakeBroker, request: Any, version: int) -> Any:
        entry_cls = AlterClientQuotasResponse.EntryData
        entries = []
        for entry in request.entries:
            entity = frozenset((c.entity_type, c.entity_name) for c in entry.entity)
            code, message = self._alter_one(entity, len(entry.entity), entry.ops, request.validate_only)
            entries.append(entry_cls(error_code=code, error_message=message, entity=[
                entry_cls.EntityData(entity_type=c.entity_type, entity_name=c.entity_name)
                for c in entry.entity]))
        return AlterClientQuotasResponse(version=version, throttle_time_ms=0, entries=entries)

    def _alter_one(self, entity: frozenset[tuple[str, str | None]], components: int, ops: list[Any],
                   validate_only: bool) -> tuple[int, str | None]:
        """Kafka `ClientQuotaControlManager.alterClientQuotas` for one entity."""
        invalid = kerrors.InvalidRequestError.errno
        kinds = {k for k, _ in entity}
        if not kinds <= set(QUOTA_KEYS):
            return kerrors.UnsupportedVersionError.errno, f"Unhandled client quota entity type: {kinds}"
        if not entity or len(kinds) != components or ("ip" in kinds and len(kinds) > 1) or any(
                name == "" for _, name in entity):
            return invalid, "Invalid quota entity"
        allowed = QUOTA_KEYS["ip" if "ip" in kinds else "user"]
        for op in ops:
            if op.key not in allowed:
                return invalid, f"Invalid configuration key {op.key}"
            if not op.remove and op.value <= 0:
                return invalid, f"Quota {op.key} must be greater than 0"
            if not op.remove and allowed[op.key] and abs(round(op.value) - op.value) > 1e-6:
                return invalid, f"Configuration {op.key} must be a Long value"
        failure = self.alter_failures.get(_public(entity)) if "ip" not in kinds else None
        if failure is not None and failure[1] != 0:
            if failure[1] is not None:
                failure[1] -= 1
            return int(failure[0]), None  # type: ignore[arg-type]
        if not validate_only:
            values = self.quotas.setdefault(entity, {})
            for op in ops:
                if op.remove:
                    values.pop(op.key, None)
                else:
                    values[op.key] = float(op.value)
            if not values:
                del self.quotas[entity]
        return 0, None

    def _sasl_handshake(self, conn: _Conn, broker: FakeBroker, request: Any, version: int) -> Any:
        ok = request.mechanism == "PLAIN"
        return SaslHandshakeResponse(version=version, mechanisms=["PLAIN"],
                                     error_code=0 if ok else kerrors.UnsupportedSaslMechanismError.errno)

    def _sasl_authenticate(self, conn: _Conn, broker: FakeBroker, request: Any, version: int) -> Any:
        parts = bytes(request.auth_bytes).split(b"\0")
        user, password = (parts[1].decode(), parts[2].decode()) if len(parts) == 3 else ("", None)
        conn.authenticated = self.sasl_users is not None and self.sasl_users.get(user) == password
        return SaslAuthenticateResponse(
            version=version, auth_bytes=b"", session_lifetime_ms=0,
            error_code=0 if conn.authenticated else kerrors.SaslAuthenticationFailedError.errno,
            error_message=None if conn.authenticated else "Invalid username or password")


_REQUESTS_BY_NAME = {cls.name.removesuffix("Request"): cls for cls in _REQUESTS.values()}


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


def _api_versions(supported: Mapping[str, tuple[int, int]], version: int, error: int) -> Any:
    keys = [ApiVersionsResponse.ApiVersion(api_key=_REQUESTS_BY_NAME[n].API_KEY, min_version=low,
                                           max_version=high) for n, (low, high) in supported.items()]
    return ApiVersionsResponse(version=version, error_code=error, api_keys=keys, throttle_time_ms=0)


def _log_dir_topics(partitions: list[FakePartition], wanted: list[Any] | None) -> list[Any]:
    """The topics of a log dir in a DescribeLogDirs answer: all (`wanted` null) or those asked for
    (Kafka `ReplicaManager.describeLogDirs`)."""
    topic_cls = DescribeLogDirsResponse.DescribeLogDirsResult.DescribeLogDirsTopic
    partition_cls = topic_cls.DescribeLogDirsPartition
    asked = None if wanted is None else {(t.topic, p) for t in wanted for p in t.partitions}
    by_topic: dict[str, list[Any]] = {}
    for p in partitions:
        if asked is None or (p.topic, p.partition) in asked:
            by_topic.setdefault(p.topic, []).append(partition_cls(
                partition_index=p.partition, partition_size=p.size_bytes, offset_lag=p.offset_lag,
                is_future_key=p.future))
    return [topic_cls(name=name, partitions=found) for name, found in by_topic.items()]


def _matches(entity: frozenset[tuple[str, str | None]], components: list[Any], strict: bool) -> bool:
    """Kafka `ClientQuotasImage.describe`: exact name (0), default (1) or any name (2) per type."""
    names = dict(entity)
    for c in components:
        if c.entity_type not in names:
            return False
        if c.match_type == 0 and names[c.entity_type] != c.match:
            return False
        if c.match_type == 1 and names[c.entity_type] is not None:
            return False
    return not strict or set(names) <= {c.entity_type for c in components}


@contextlib.contextmanager
def running_cluster(*args: Any, **kwargs: Any) -> Iterator[KafkaTestCluster]:
    """A started `KafkaTestCluster`, stopped on exit (for pytest fixtures)."""
    cluster = KafkaTestCluster(*args, **kwargs).start()
    try:
        yield cluster
    finally:
        cluster.stop()


def main(argv: list[str] | None = None) -> None:
    """`python -m tests.support.kafka_broker [--brokers 1,2,3] [--log-dirs N]`: serve a test cluster
    until interrupted (to try `quotaplane serve --bootstrap-servers` by hand)."""
    parser = argparse.ArgumentParser(prog="python -m tests.support.kafka_broker")
    parser.add_argument("--brokers", default="1,2,3", help="broker ids, comma-separated")
    parser.add_argument("--log-dirs", type=int, default=1, help="log dirs per broker")
    args = parser.parse_args(argv)
    with running_cluster([int(b) for b in args.brokers.split(",")], log_dirs=args.log_dirs) as cluster:
        print(cluster.bootstrap_servers, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
