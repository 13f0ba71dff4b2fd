"""The collector against the real broker (tests.support.pulsar): a round's topics, subscriptions,
PIP-323 fields, quota maps and broker settings, its rows and policies; and the bad input the brief of
issue 65 names: the admin API unreachable, 401 and 403, a namespace that does not exist, a topic deleted
between two rounds. Each is one line in `Collection.errors`, never an exception."""

from __future__ import annotations

import os
import time

import pytest

from quotaplane.backlog.engine.evaluate import evaluate
from quotaplane.backlog.engine.resolve import resolve
from quotaplane.live.pulsar.admin import AdminSettings, PulsarAdmin
from quotaplane.live.pulsar.collect import PulsarCollector
from quotaplane.live.pulsar.model import Collection, PulsarError
from quotaplane.live.pulsar.rows import backlog_policies, snapshot_rows, snapshots
from tests.support.pulsar.fixture import PulsarTarget
from tests.support.pulsar.launcher import free_port
from tests.support.pulsar.scenarios import (
    fresh_namespace,
    produce,
    set_namespace_quota,
    set_topic_quota,
    subscribe,
)

pytestmark = pytest.mark.xdist_group("pulsar")
NOBODY_TOKEN_ENV = "QUOTAPLANE_PULSAR_NOBODY_TOKEN"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def collector(target: PulsarTarget, *namespaces: str, token: str | None = "super", **settings: object
              ) -> PulsarCollector:
    bearer = target.token if token == "super" else token
    return PulsarCollector(PulsarAdmin(AdminSettings(target.admin_url, bearer, **settings)), list(namespaces))


def test_a_round_reads_topics_subscriptions_and_quotas(pulsar_broker: PulsarTarget) -> None:
    ns = fresh_namespace(pulsar_broker)
    plain, limited = f"persistent://{ns}/plain", f"persistent://{ns}/limited"
    with_client = pulsar_broker.client()
    try:
        subscribe(with_client, plain, "slow")
        subscribe(with_client, plain, "idle")
        subscribe(with_client, limited, "slow")
        published = produce(with_client, plain, 5)
        produce(with_client, limited, 3)
        with_client.create_reader(plain, __import__("pulsar").MessageId.earliest).close()
        pulsar_broker.call("PUT", f"admin/v2/persistent/{ns}/parted/partitions", 2)
        subscribe(with_client, f"persistent://{ns}/parted", "slow")
    finally:
        with_client.close()
    set_namespace_quota(pulsar_broker, ns, "destination_storage", 1_000_000, "producer_exception")
    set_topic_quota(pulsar_broker, limited, "message_age", 3600, "consumer_backlog_eviction")

    round_ = collector(pulsar_broker, ns).collect(now_ms())
    assert [e.line() for e in round_.errors] == []
    by_name = {t.topic: t for t in round_.topics}
    assert set(by_name) == {plain, limited, f"persistent://{ns}/parted-partition-0",
                            f"persistent://{ns}/parted-partition-1"}
    topic = by_name[plain]
    assert [s.name for s in topic.subscriptions] == ["idle", "slow"]
    slow = topic.subscriptions[1]
    assert slow.entries == 5 and slow.size_bytes == topic.backlog_size_bytes > 5 * 100
    assert published[0] - 1000 <= slow.oldest_publish_ts_ms <= published[0]
    assert slow.oldest_ledger_close_ts_ms is None  # the topic's only ledger is open
    assert by_name[f"persistent://{ns}/parted-partition-1"].partitioned_topic == f"persistent://{ns}/parted"
    assert round_.skipped == {}  # the listing leaves out system topics; the reader is closed
    assert round_.namespace_quotas[ns].size.limit == 1_000_000
    assert round_.topic_quotas[limited].time.policy == "consumer_backlog_eviction"
    assert round_.broker is not None
    assert round_.broker["preciseTimeBasedBacklogQuotaCheck"] in ("true", "false")

    rows, dropped = snapshot_rows(round_)
    assert dropped == {} and len(rows) == 5  # plain: idle + slow, limited: slow, two partitions: slow
    policies = backlog_policies(round_)
    assert not isinstance(policies, PulsarError)
    for t in round_.topics:  # quotaplane's resolution gives the limits Pulsar's stats report
        quotas = resolve(policies, t.topic, t.partitioned_topic)
        assert (quotas.size_limit, quotas.time_limit) == (t.limit_size, t.limit_time), t.topic
    result = {r.topic: r for r in evaluate(policies, snapshots(round_))}
    assert result[plain].oldest_subscription in ("idle", "slow") and result[plain].exceeded is None


def test_the_admin_api_unreachable_is_one_line(pulsar_broker: PulsarTarget) -> None:
    round_ = PulsarCollector(PulsarAdmin(AdminSettings(f"http://127.0.0.1:{free_port()}", timeout_s=2)),
                             ["public/default"]).collect(now_ms())
    assert round_.topics == () and {e.reason for e in round_.errors} == {"UNREACHABLE"}
    assert all("\n" not in e.line() for e in round_.errors)


def test_no_token_is_401_and_a_role_without_permission_is_403(pulsar_broker: PulsarTarget) -> None:
    if pulsar_broker.token is None:
        pytest.skip("the external Pulsar does not authenticate (QUOTAPLANE_PULSAR_TOKEN unset): "
                    "no 401 or 403")
    ns = fresh_namespace(pulsar_broker)
    unauthenticated = collector(pulsar_broker, ns, token=None).collect(now_ms())
    assert unauthenticated.topics == ()
    lines = [e.line() for e in unauthenticated.errors]
    assert {e.reason for e in unauthenticated.errors} == {"UNAUTHORIZED"}, lines
    forged = collector(pulsar_broker, ns, token=pulsar_broker.token[:-4] + "AAAA").collect(now_ms())
    assert {e.reason for e in forged.errors} == {"UNAUTHORIZED"}
    nobody = (pulsar_broker.standalone.token_for("nobody") if pulsar_broker.standalone is not None
              else os.environ.get(NOBODY_TOKEN_ENV))
    if nobody is None:
        pytest.skip(f"an external Pulsar needs {NOBODY_TOKEN_ENV}, a token of a role without permissions, "
                    "for 403")
    forbidden = collector(pulsar_broker, ns, token=nobody).collect(now_ms())
    # Pulsar answers a valid role that is no super-user 401 on the broker's configuration
    # (`validateBothSuperuserAndBrokerOperation`) and 403 on the namespace (`validateNamespaceOperation`)
    assert {(e.where, e.reason) for e in forbidden.errors} == {
        ("broker configuration", "UNAUTHORIZED"), (f"namespace {ns}", "FORBIDDEN")}, \
        [e.line() for e in forbidden.errors]
    line = next(e for e in forbidden.errors if e.reason == "FORBIDDEN").line()
    assert line.startswith("FORBIDDEN: ") and "HTTP 403" in line and "\n" not in line


def test_a_namespace_that_does_not_exist_is_one_line_and_the_others_are_read(
        pulsar_broker: PulsarTarget) -> None:
    ns = fresh_namespace(pulsar_broker)
    client = pulsar_broker.client()
    try:
        subscribe(client, f"persistent://{ns}/a")
        produce(client, f"persistent://{ns}/a", 1)
    finally:
        client.close()
    round_ = collector(pulsar_broker, "public/does-not-exist", ns).collect(now_ms())
    assert [e.reason for e in round_.errors] == ["NAMESPACE_NOT_FOUND"]
    assert round_.errors[0].line().startswith(
        "NAMESPACE_NOT_FOUND: namespace public/does-not-exist: HTTP 404")
    assert [t.topic for t in round_.topics] == [f"persistent://{ns}/a"]


def test_a_topic_deleted_between_two_rounds(pulsar_broker: PulsarTarget) -> None:
    ns = fresh_namespace(pulsar_broker)
    keep, gone = f"persistent://{ns}/keep", f"persistent://{ns}/gone"
    client = pulsar_broker.client()
    try:
        for topic in (keep, gone):
            subscribe(client, topic)
            produce(client, topic, 2)
    finally:
        client.close()
    watch = collector(pulsar_broker, ns)
    first = watch.collect(now_ms())
    assert {t.topic for t in first.topics} == {keep, gone}
    pulsar_broker.call("DELETE", f"admin/v2/persistent/{ns}/gone?force=true")
    second = watch.collect(now_ms())
    assert [t.topic for t in second.topics] == [keep] and second.errors == ()


class DeletingAdmin(PulsarAdmin):
    """The real admin client, deleting one topic on the real broker between the listing and its stats:
    the race the broker cannot be made to show on demand, made to happen."""

    def __init__(self, target: PulsarTarget, victim: str) -> None:
        super().__init__(AdminSettings(target.admin_url, target.token))
        self.target, self.victim = target, victim

    def topic_stats(self, topic: str) -> object:
        if topic == self.victim:
            self.target.call("DELETE", f"admin/v2/{topic.replace('://', '/')}?force=true")
        return super().topic_stats(topic)


def test_a_topic_deleted_between_the_listing_and_its_stats(pulsar_broker: PulsarTarget) -> None:
    ns = fresh_namespace(pulsar_broker)
    keep, gone = f"persistent://{ns}/keep", f"persistent://{ns}/gone"
    client = pulsar_broker.client()
    try:
        for topic in (keep, gone):
            subscribe(client, topic)
            produce(client, topic, 2)
    finally:
        client.close()
    round_: Collection = PulsarCollector(DeletingAdmin(pulsar_broker, gone), [ns]).collect(now_ms())
    assert [t.topic for t in round_.topics] == [keep]
    assert [e.reason for e in round_.errors] == ["TOPIC_NOT_FOUND"]
    assert round_.errors[0].line().startswith(f"TOPIC_NOT_FOUND: topic {gone}: HTTP 404")
