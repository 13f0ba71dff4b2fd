"""The Kafka Admin API adapter: the real client library (kafka-python) against a cluster.

By default the cluster is the loopback test broker of `tests.support.kafka_broker`, scripted per test.
With `QUOTAPLANE_KAFKA_BOOTSTRAP=host:port` (and optionally `QUOTAPLANE_KAFKA_COMMAND_CONFIG=file`)
the same tests run against that real cluster instead (docs/live.md "Against a real cluster"): the
test broker is not started, the assertions that hold on any cluster are checked, alterations touch
only a quota entity made up for the test (and removed again), and the tests that script faults are
skipped.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import kafka.errors as kerrors
import pytest

from quotaplane.core.errors import ConfigError, ConfigErrors
from quotaplane.core.properties import load_properties
from quotaplane.live.admin import AdminError, LogDir, QuotaAlteration, Replica
from quotaplane.live.kafka_admin import KafkaClusterAdmin, client_options
from quotaplane.live.log_dirs import broker_log_dirs
from tests.support.kafka_broker import GIB, FakeLogDir, FakePartition, KafkaTestCluster, running_cluster

REAL_BOOTSTRAP = os.environ.get("QUOTAPLANE_KAFKA_BOOTSTRAP")
REAL_COMMAND_CONFIG = os.environ.get("QUOTAPLANE_KAFKA_COMMAND_CONFIG")
TIMEOUT_S = 10.0 if REAL_BOOTSTRAP else 1.0
SLACK_S = 1.5  # scheduling slack on a shared 2-core machine
PRODUCE = "producer_byte_rate"
NEEDS_FAKE = ("scripts a fault or a broker state, which needs the loopback test broker: "
              "QUOTAPLANE_KAFKA_BOOTSTRAP points at a real cluster")
needs_fake = pytest.mark.skipif(REAL_BOOTSTRAP is not None, reason=NEEDS_FAKE)


@dataclass
class Target:
    bootstrap: str
    properties: dict[str, str]
    fake: KafkaTestCluster | None

    def scripted(self) -> KafkaTestCluster:
        if self.fake is None:
            pytest.skip(NEEDS_FAKE)
        return self.fake


@pytest.fixture(autouse=True)
def no_thread_leak() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + 5
    while (extra := [t for t in threading.enumerate() if t not in before and t.is_alive()]) and \
            time.monotonic() < deadline:
        time.sleep(0.05)
    assert extra == [], f"threads left running: {extra}"


@pytest.fixture
def target() -> Iterator[Target]:
    if REAL_BOOTSTRAP:
        properties = load_properties(REAL_COMMAND_CONFIG) if REAL_COMMAND_CONFIG else {}
        yield Target(REAL_BOOTSTRAP, properties, None)
        return
    with running_cluster((1, 2, 3), log_dirs=2) as cluster:
        yield Target(cluster.bootstrap_servers, {}, cluster)
        assert cluster.errors == []


@pytest.fixture
def admin(target: Target) -> Iterator[KafkaClusterAdmin]:
    client = KafkaClusterAdmin(target.bootstrap, target.properties, TIMEOUT_S)
    yield client
    client.close()


def test_active_brokers(target: Target, admin: KafkaClusterAdmin) -> None:
    brokers = admin.active_brokers()
    assert brokers and brokers == sorted(set(brokers)) and all(isinstance(b, int) for b in brokers)
    if target.fake is not None:
        assert brokers == [1, 2, 3]


def test_log_dirs_report_the_volume_of_every_log_dir(target: Target, admin: KafkaClusterAdmin) -> None:
    if target.fake is not None:
        with target.fake.lock:
            target.fake.broker(2).log_dirs = [FakeLogDir("/data/a", 500 * GIB, 20 * GIB),
                                              FakeLogDir("/data/b", 200 * GIB, 199 * GIB)]
    brokers = admin.active_brokers()
    dirs = admin.log_dirs(brokers)
    assert {d.broker_id for d in dirs} == set(brokers)
    for d in dirs:
        assert d.error is None and d.log_dir, d
        assert d.total_bytes is not None and d.usable_bytes is not None
        assert 0 <= d.usable_bytes <= d.total_bytes
    if target.fake is not None:
        assert [d for d in dirs if d.broker_id == 2] == [LogDir(2, "/data/a", 500 * GIB, 20 * GIB, None),
                                                         LogDir(2, "/data/b", 200 * GIB, 199 * GIB, None)]
        assert len(dirs) == 6
        # KIP-827 sizes need v4; these log dirs hold no partition.
        assert {v for _, v in target.fake.requests_for("DescribeLogDirs")} == {4}


def test_quotas_are_set_described_and_removed(target: Target, admin: KafkaClusterAdmin) -> None:
    tag = f"quotaplane-test-{uuid.uuid4().hex[:8]}"
    entities = [(tag, None), (None, tag), (tag, tag)]
    if target.fake is not None:
        entities += [("<default>", None), (tag, "<default>")]
        target.fake.set_quota((None, "operator"), "consumer_byte_rate", 5e6)
    try:
        result = admin.alter_client_quotas(
            [QuotaAlteration(e, PRODUCE, 1_048_576.0 + i) for i, e in enumerate(entities)])
        assert result == dict.fromkeys(entities)
        quotas = admin.client_quotas()
        for i, entity in enumerate(entities):
            assert quotas[entity][PRODUCE] == 1_048_576.0 + i
        if target.fake is not None:
            assert quotas[(None, "operator")] == {"consumer_byte_rate": 5e6}
            assert target.fake.quota_values()[("<default>", None)] == {PRODUCE: 1_048_576.0 + 3}
    finally:
        result = admin.alter_client_quotas([QuotaAlteration(e, PRODUCE, None) for e in entities])
    assert result == dict.fromkeys(entities)
    assert not set(entities) & set(admin.client_quotas())  # no quota key left: no entity


def test_an_alteration_changes_only_its_key(target: Target, admin: KafkaClusterAdmin) -> None:
    entity = (None, f"quotaplane-test-{uuid.uuid4().hex[:8]}")
    try:
        admin.alter_client_quotas([QuotaAlteration(entity, "consumer_byte_rate", 4096.0)])
        assert admin.alter_client_quotas([QuotaAlteration(entity, PRODUCE, 2048.0)]) == {entity: None}
        assert admin.client_quotas()[entity] == {"consumer_byte_rate": 4096.0, PRODUCE: 2048.0}
        admin.alter_client_quotas([QuotaAlteration(entity, PRODUCE, None)])
        assert admin.client_quotas()[entity] == {"consumer_byte_rate": 4096.0}
    finally:
        admin.alter_client_quotas([QuotaAlteration(entity, "consumer_byte_rate", None),
                                   QuotaAlteration(entity, PRODUCE, None)])


def test_an_alteration_the_client_cannot_send_is_refused_per_entity(admin: KafkaClusterAdmin) -> None:
    result = admin.alter_client_quotas([QuotaAlteration((None, None), PRODUCE, 1.0),
                                        QuotaAlteration((None, "x"), PRODUCE, float("inf"))])
    assert set(result) == {(None, None), (None, "x")}
    assert all(e is not None and e.startswith("INVALID_REQUEST: ") for e in result.values())


# -- scripted faults (the loopback broker only) ---------------------------------------------------


def test_fenced_and_unlisted_brokers_are_not_active(target: Target, admin: KafkaClusterAdmin) -> None:
    fake = target.scripted()
    with fake.lock:
        fake.broker(3).fenced = True
    assert admin.active_brokers() == [1, 2]
    with fake.lock:
        fake.broker(3).fenced, fake.broker(2).listed = False, False
    assert admin.active_brokers() == [1, 3]


def test_a_broker_that_does_not_answer_is_a_timeout_of_that_broker(target: Target,
                                                                     admin: KafkaClusterAdmin) -> None:
    fake = target.scripted()
    with fake.lock:
        fake.broker(2).hang = True
    started = time.monotonic()
    dirs = admin.log_dirs([1, 2, 3])
    assert time.monotonic() - started < TIMEOUT_S + SLACK_S  # the brokers are asked at once
    failed = [d for d in dirs if d.error is not None]
    assert [(d.broker_id, d.log_dir, d.total_bytes, d.usable_bytes) for d in failed] == [(2, "", None, None)]
    assert failed[0].error is not None and failed[0].error.startswith("TIMEOUT: broker 2")
    assert {d.broker_id for d in dirs if d.error is None} == {1, 3}
    # A cluster-wide request avoids the broker that just timed out.
    started = time.monotonic()
    assert admin.active_brokers() == [1, 2, 3]
    assert time.monotonic() - started < SLACK_S
    with fake.lock:
        fake.broker(2).hang = False
    assert all(d.error is None for d in admin.log_dirs([1, 2, 3]))  # and it recovers


def test_a_request_that_starts_late_and_times_out_is_closed_before_the_answer(
        target: Target, admin: KafkaClusterAdmin, monkeypatch: pytest.MonkeyPatch) -> None:
    """The broker that did not answer has its connection closed before `log_dirs` returns, however
    late its request started: the next round's request goes out on a new connection (a wait of
    the round's own that ended first let it go out on the old one, then closed under it)."""
    fake = target.scripted()
    send = admin._send
    late = [2]

    async def starts_late(request: object, node_id: int) -> object:
        if node_id in late:
            late.remove(node_id)
            time.sleep(0.3)  # the client's IO thread busy: this request starts late
        return await send(request, node_id)

    monkeypatch.setattr(admin, "_send", starts_late)
    with fake.lock:
        fake.broker(2).hang = True
    assert [d.broker_id for d in admin.log_dirs([1, 2, 3]) if d.error is not None] == [2]
    with fake.lock:
        fake.broker(2).hang = False
    assert [(d.broker_id, d.error) for d in admin.log_dirs([1, 2, 3]) if d.error is not None] == []


@needs_fake
def test_a_cluster_wide_request_tries_a_second_broker() -> None:
    with running_cluster((1, 2)) as fake:
        admin = KafkaClusterAdmin(fake.bootstrap_servers, {}, TIMEOUT_S)
        try:
            with fake.lock:
                fake.broker(1).hang_apis = {"DescribeCluster", "DescribeClientQuotas"}
            started = time.monotonic()
            assert admin.active_brokers() == [1, 2]
            assert admin.client_quotas() == {}
            assert time.monotonic() - started < 2 * TIMEOUT_S + SLACK_S
            with fake.lock:
                fake.broker(2).hang_apis = {"DescribeCluster", "AlterClientQuotas"}
                fake.broker(1).hang_apis = {"DescribeCluster", "AlterClientQuotas"}
            started = time.monotonic()
            with pytest.raises(AdminError) as error:
                admin.active_brokers()
            assert error.value.reason == "TIMEOUT" and "broker 1" in error.value.message
            assert "broker 2" in error.value.message
            with pytest.raises(AdminError) as error:
                admin.alter_client_quotas([QuotaAlteration(("<default>", None), PRODUCE, 10.0)])
            assert error.value.reason == "TIMEOUT"
            assert time.monotonic() - started < 4 * TIMEOUT_S + 2 * SLACK_S
        finally:
            admin.close()
        assert fake.errors == []


def test_an_error_code_of_one_log_dir(target: Target, admin: KafkaClusterAdmin) -> None:
    fake = target.scripted()
    with fake.lock:
        fake.broker(1).log_dirs[1].error_code = kerrors.KafkaStorageError.errno
        fake.broker(3).log_dirs_error = kerrors.ClusterAuthorizationFailedError.errno
    dirs = admin.log_dirs([1, 2, 3])
    broken = fake.broker(1).log_dirs[1].path
    healthy, offline = (d for d in dirs if d.broker_id == 1)
    assert healthy.error is None and healthy.total_bytes is not None
    assert offline == LogDir(
        1, broken, None, None, "KAFKA_STORAGE_ERROR: Disk error when trying to access log file on the disk.")
    assert [(d.log_dir, (d.error or "").split(":")[0]) for d in dirs if d.broker_id == 3] == [
        ("", "CLUSTER_AUTHORIZATION_FAILED")]


def test_log_dirs_report_the_size_of_every_partition_replica(target: Target,
                                                             admin: KafkaClusterAdmin) -> None:
    if target.fake is None:  # any cluster: every replica has a topic, a partition and a size
        replicas = [r for d in admin.log_dirs(admin.active_brokers()) for r in d.replicas]
        assert all(r.topic and r.partition >= 0 and r.size_bytes >= 0 for r in replicas)
        return
    with target.fake.lock:
        target.fake.broker(2).log_dirs = [
            FakeLogDir("/data/a", 500 * GIB, 20 * GIB, partitions=[
                FakePartition("orders", 1, 7 * GIB), FakePartition("orders", 0, 1 << 40),
                FakePartition("clicks", 2, 0), FakePartition("orders", 3, -1)]),
            FakeLogDir("/data/b", 200 * GIB, 199 * GIB, partitions=[  # a move in progress
                FakePartition("orders", 1, 3 * GIB, future=True), FakePartition("audit", 0, 12)])]
    dirs = admin.log_dirs([2])
    assert dirs == [  # the future replica is left out; a bad size is passed on (the collector drops it)
        LogDir(2, "/data/a", 500 * GIB, 20 * GIB, None, (
            Replica("clicks", 2, 0), Replica("orders", 0, 1 << 40), Replica("orders", 1, 7 * GIB),
            Replica("orders", 3, -1))),
        LogDir(2, "/data/b", 200 * GIB, 199 * GIB, None, (Replica("audit", 0, 12),))]
    assert all(r.is_leader is None for d in dirs for r in d.replicas)  # no topic metadata is fetched
    assert target.fake.requests_for("DescribeLogDirs") == [(2, 4)]


def test_the_leader_flag_comes_from_the_cached_metadata() -> None:
    from kafka.protocol.admin import DescribeLogDirsResponse

    result = DescribeLogDirsResponse.DescribeLogDirsResult
    topic = result.DescribeLogDirsTopic
    part = topic.DescribeLogDirsPartition
    partitions = [part(partition_index=i, partition_size=i, offset_lag=0, is_future_key=False)
                  for i in range(4)]
    response = DescribeLogDirsResponse(version=4, throttle_time_ms=0, error_code=0, results=[result(
        error_code=0, log_dir="/d", total_bytes=10, usable_bytes=5,
        topics=[topic(name="t", partitions=partitions)])])
    leaders = {0: 7, 1: 8, 2: -1}  # 3: unknown; -1: no leader now
    (d,) = broker_log_dirs(7, response, lambda t, p: leaders.get(p))
    assert [r.is_leader for r in d.replicas] == [True, False, None, None]


def test_a_broker_missing_from_the_answers(target: Target, admin: KafkaClusterAdmin) -> None:
    fake = target.scripted()
    assert admin.active_brokers() == [1, 2, 3]
    with fake.lock:  # broker 3 shuts down between DescribeCluster and DescribeLogDirs
        fake.broker(3).listed, fake.broker(3).down = False, True
    dirs = admin.log_dirs([1, 2, 3, 9])
    failed = {d.broker_id: d.error for d in dirs if d.error is not None}
    assert set(failed) == {3, 9} and {d.broker_id for d in dirs if d.error is None} == {1, 2}
    assert all(e is not None and e.startswith("BROKER_NOT_AVAILABLE: ") for e in failed.values())
    assert admin.active_brokers() == [1, 2]
    with fake.lock:
        fake.broker(1).log_dirs = []
    assert [d.error for d in admin.log_dirs([1])] == [
        "NO_LOG_DIRS: broker 1: DescribeLogDirs listed no log dir"]


def test_a_broker_that_joins_is_described(target: Target, admin: KafkaClusterAdmin) -> None:
    fake = target.scripted()
    fake.add_broker(4, log_dirs=[FakeLogDir("/new", 10 * GIB, 9 * GIB)])
    assert admin.active_brokers() == [1, 2, 3, 4]
    assert [d for d in admin.log_dirs([4])] == [LogDir(4, "/new", 10 * GIB, 9 * GIB, None)]


def test_a_broker_without_log_dir_sizes(target: Target, admin: KafkaClusterAdmin) -> None:
    fake = target.scripted()
    with fake.lock:
        fake.broker(2).api_versions = {"DescribeLogDirs": (1, 3)}  # before Kafka 3.3 (KIP-827)
    dirs = {d.broker_id: d for d in admin.log_dirs([1, 2]) if d.error is not None}
    assert list(dirs) == [2] and (dirs[2].error or "").startswith("UNSUPPORTED_VERSION: broker 2")


def test_a_failing_alteration_is_reported_per_entity(target: Target, admin: KafkaClusterAdmin) -> None:
    fake = target.scripted()
    fake.set_quota(("alice", None), PRODUCE, 1000.0)
    fake.fail_alter(("alice", None), kerrors.ThrottlingQuotaExceededError.errno, times=1)
    changes = [QuotaAlteration(("alice", None), PRODUCE, 500.0),
               QuotaAlteration(("<default>", None), PRODUCE, 50.0)]
    result = admin.alter_client_quotas(changes)
    assert result[("<default>", None)] is None
    assert (result[("alice", None)] or "").startswith("THROTTLING_QUOTA_EXCEEDED: ")
    assert admin.client_quotas() == {("alice", None): {PRODUCE: 1000.0}, ("<default>", None): {PRODUCE: 50.0}}
    assert admin.alter_client_quotas(changes) == dict.fromkeys([("alice", None), ("<default>", None)])
    assert admin.client_quotas()[("alice", None)] == {PRODUCE: 500.0}  # the retry was applied
    # The broker's own validation: a byte rate is a whole number (Kafka `ClientQuotaControlManager`).
    result = admin.alter_client_quotas([QuotaAlteration(("bob", None), PRODUCE, 10.5)])
    assert (result[("bob", None)] or "").startswith("INVALID_REQUEST: ")


def test_errors_of_a_whole_request(target: Target, admin: KafkaClusterAdmin) -> None:
    fake = target.scripted()
    with fake.lock:
        fake.describe_quotas_error = kerrors.ClusterAuthorizationFailedError.errno
        fake.describe_cluster_error = kerrors.ClusterAuthorizationFailedError.errno
    with pytest.raises(AdminError) as error:
        admin.client_quotas()
    assert error.value.reason == "DESCRIBE_QUOTAS_ERROR"
    assert "CLUSTER_AUTHORIZATION_FAILED" in error.value.message
    with pytest.raises(AdminError) as error:
        admin.active_brokers()
    assert error.value.reason == "DESCRIBE_CLUSTER_ERROR"


def test_a_closed_admin(admin: KafkaClusterAdmin) -> None:
    admin.close()
    admin.close()
    with pytest.raises(AdminError, match="closed"):
        admin.active_brokers()


# -- bad bootstrap servers and command configs ----------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(("servers", "rule"), [
    ("no-such-host.invalid:9092", "unknown host no-such-host.invalid"),
    ("localhost", "localhost is not host:port"),
    ("127.0.0.1:99999", "127.0.0.1:99999 is not host:port"),
    ("", "(empty) is not host:port"),
])
def test_a_malformed_or_unknown_bootstrap_server(servers: str, rule: str) -> None:
    started = time.monotonic()
    with pytest.raises(ConfigError) as error:
        KafkaClusterAdmin(servers, {}, 5.0)
    assert error.value.prop == "--bootstrap-servers" and error.value.rule.startswith(rule)
    assert time.monotonic() - started < 1.0 + SLACK_S
    assert "\n" not in str(error.value)


def test_an_unreachable_bootstrap_server() -> None:
    servers = f"127.0.0.1:{_free_port()}"
    started = time.monotonic()
    with pytest.raises(ConfigError) as error:
        KafkaClusterAdmin(servers, {}, 1.0)
    assert str(error.value).startswith(f"--bootstrap-servers={servers}: no Kafka broker answered within 1 s")
    assert time.monotonic() - started < 1.0 + SLACK_S


@needs_fake
def test_a_bootstrap_server_that_never_answers() -> None:
    with running_cluster((1,)) as fake:
        with fake.lock:
            fake.broker(1).hang = True
        with pytest.raises(ConfigError, match="no Kafka broker answered within 1 s"):
            KafkaClusterAdmin(fake.bootstrap_servers, {}, 1.0)


JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="admin" password="s3\\"cret";')


def test_sasl_plain_credentials_from_a_jaas_config() -> None:
    props = {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.jaas.config": JAAS,
             "ssl.truststore.type": "PEM", "ssl.truststore.location": "/etc/ca.pem",
             "ssl.endpoint.identification.algorithm": "", "client.id": "qp", "retry.backoff.ms": "250"}
    assert client_options(props) == {
        "security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "sasl_plain_username": "admin",
        "sasl_plain_password": 's3"cret', "ssl_cafile": "/etc/ca.pem", "ssl_check_hostname": False,
        "client_id": "qp", "retry_backoff_ms": 250}
    assert client_options({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
                           "sasl.username": "u", "sasl.password": "p"})["sasl_plain_username"] == "u"


@pytest.mark.parametrize(("props", "prop", "rule"), [
    ({"request.timeout.ms": "1000"}, "request.timeout.ms", "not supported by quotaplane's Kafka client"),
    ({"security.protocol": "SSL", "ssl.truststore.location": "/t.jks"}, "ssl.truststore.type",
     "JKS truststores are not supported"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"}, "sasl.mechanism", "must be one of"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "sasl.username",
     "security.protocol=SASL_PLAINTEXT needs a username and a password"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256", "sasl.jaas.config": JAAS},
     "sasl.jaas.config", "must be `ScramLoginModule required"),
    ({"security.protocol": "TLS"}, "security.protocol", "must be one of PLAINTEXT"),
    ({"sasl.mechanism": "PLAIN"}, "sasl.mechanism", "has no effect with security.protocol=PLAINTEXT"),
    ({"retry.backoff.ms": "soon"}, "retry.backoff.ms", "must be a whole number"),
])
def test_a_bad_command_config(props: dict[str, str], prop: str, rule: str) -> None:
    with pytest.raises(ConfigError) as error:
        KafkaClusterAdmin("127.0.0.1:9", props, 1.0)
    assert error.value.prop == prop and error.value.rule.startswith(rule)
    assert "s3" not in str(error.value)  # a password is never shown


def test_several_bad_properties_are_reported_together() -> None:
    with pytest.raises(ConfigErrors) as error:
        client_options({"sasl.kerberos.service.name": "kafka", "default.api.timeout.ms": "1",
                        "sasl.jaas.config": JAAS})
    assert [e.prop for e in error.value.errors] == ["default.api.timeout.ms", "sasl.kerberos.service.name",
                                                     "sasl.jaas.config"]
    assert "s3" not in str(error.value)


@needs_fake
def test_sasl_plain_against_the_broker() -> None:
    props = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": JAAS}
    with running_cluster((1, 2), sasl_users={"admin": 's3"cret'}) as fake:
        admin = KafkaClusterAdmin(fake.bootstrap_servers, props, 5.0)
        try:
            assert admin.active_brokers() == [1, 2]
            assert len(admin.log_dirs([1, 2])) == 2
        finally:
            admin.close()
        started = time.monotonic()
        with pytest.raises(ConfigError) as error:
            KafkaClusterAdmin(fake.bootstrap_servers, {**props, "sasl.jaas.config": JAAS.replace("s3", "x")},
                              30.0)
        assert str(error.value) == (
            "--command-config=SASL_PLAINTEXT PLAIN user admin: authentication failed: "
            "SASL_AUTHENTICATION_FAILED: Invalid username or password")
        assert time.monotonic() - started < SLACK_S  # fatal at once, as in Kafka's clients
        assert {v for _, v in fake.requests_for("SaslHandshake")} == {1}
        assert fake.errors == []
