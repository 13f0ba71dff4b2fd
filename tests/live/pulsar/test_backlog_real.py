"""Pulsar's own backlog-quota decisions against quotaplane's on the snapshots it collected (issue 65,
"Checked against the real broker" 1; docs/backlog.md "Against a real broker").

Each test drives one topic past a size quota (namespace level) or a time quota (topic level) with a
subscription that never acknowledges, under one retention policy, then compares:

- what quotaplane decides (`quotaplane.backlog.engine.evaluate` on the rows the collector read, under
  the policies it read): the exceeded quota, the action, the producers' fate, what an eviction removes;
- what Pulsar did: a new producer refused with `ProducerBlockedQuotaExceededError` (hold) or
  `...Exception` (exception), the connected producer disconnected, the backlog after an eviction, and
  `pulsar_storage_backlog_quota_exceeded_evictions_total{quota_type}` on its `/metrics`.

The backlog is produced before the quota is set, so the rows collected then are the backlog Pulsar's
next check sees (nothing is published in between).
"""

from __future__ import annotations

import time
from typing import Any

import pulsar
import pytest

from quotaplane.backlog.engine.evaluate import evaluate
from quotaplane.backlog.engine.model import TickResult
from quotaplane.live.pulsar.admin import AdminSettings, PulsarAdmin
from quotaplane.live.pulsar.collect import PulsarCollector
from quotaplane.live.pulsar.model import Collection, PulsarError
from quotaplane.live.pulsar.rows import backlog_policies, snapshots
from tests.support.pulsar.fixture import PulsarTarget
from tests.support.pulsar.scenarios import (
    fresh_namespace,
    metric,
    produce,
    set_namespace_quota,
    set_topic_quota,
    subscribe,
    topic_stats,
    wait_until,
)

pytestmark = pytest.mark.xdist_group("pulsar")

HOLD, EXCEPTION, EVICTION = "producer_request_hold", "producer_exception", "consumer_backlog_eviction"
PRODUCER_ERROR = {HOLD: pulsar.ProducerBlockedQuotaExceededError,
                  EXCEPTION: pulsar.ProducerBlockedQuotaExceededException}
EVICTIONS = "pulsar_storage_backlog_quota_exceeded_evictions_total"
MESSAGES = 40
SIZE_LIMIT = 2000  # bytes: 40 entries of 100-byte messages hold ~5.4 kB
TIME_LIMIT = 2  # seconds


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def watch(target: PulsarTarget, ns: str) -> PulsarCollector:
    return PulsarCollector(PulsarAdmin(AdminSettings(target.admin_url, target.token)), [ns])


def decide(collection: Collection, policies_from: Collection) -> TickResult:
    """quotaplane's check of the collection's one topic under the policies another round read."""
    assert collection.errors == () and policies_from.errors == (), [e.line() for e in collection.errors]
    policies = backlog_policies(policies_from)
    assert not isinstance(policies, PulsarError), policies
    (result,) = evaluate(policies, snapshots(collection))
    return result


def evictions(target: PulsarTarget, topic: str, quota_type: str) -> float:
    return metric(target.metrics(), EVICTIONS, topic=topic, quota_type=quota_type) or 0.0


def backlog_entries(target: PulsarTarget, topic: str, subscription: str = "slow") -> int:
    return int(topic_stats(target, topic)["subscriptions"][subscription]["msgBacklog"])


def connected_then_refused(target: PulsarTarget, client: Any, topic: str, producer: Any, policy: str) -> None:
    """Pulsar's producer-side action: the producer connected before the check is disconnected (the
    topic lists no publisher), and a new producer is refused with the policy's error."""
    wait_until("the check disconnects the producer",
               lambda: topic_stats(target, topic)["publishers"] == [], timeout_s=15)
    with pytest.raises(PRODUCER_ERROR[policy]):
        client.create_producer(topic, batching_enabled=False)
    outcome = "sent"
    try:
        producer.send(b"late")
    except (pulsar.Timeout, PRODUCER_ERROR[policy]) as exc:
        outcome = type(exc).__name__
    # hold keeps the message until the send timeout; exception fails it at the refused reconnection
    assert outcome == {HOLD: "Timeout", EXCEPTION: "ProducerBlockedQuotaExceededException"}[policy]


@pytest.mark.parametrize("policy", [HOLD, EXCEPTION, EVICTION])
def test_size_quota(pulsar_broker: PulsarTarget, policy: str) -> None:
    ns = fresh_namespace(pulsar_broker, "size")
    topic = f"persistent://{ns}/filled"
    client = pulsar_broker.client()
    try:
        subscribe(client, topic)
        produce(client, topic, MESSAGES)
        producer = client.create_producer(topic, batching_enabled=False, send_timeout_millis=3000)
        rounds = watch(pulsar_broker, ns)
        before = rounds.collect(now_ms())
        set_namespace_quota(pulsar_broker, ns, "destination_storage", SIZE_LIMIT, policy)
        decided = decide(before, rounds.collect(now_ms()))

        assert (decided.exceeded, decided.action, decided.size_evictions_total) == (
            "size", policy, 1 if policy == EVICTION else 0)
        assert decided.backlog_size_bytes == before.topics[0].backlog_size_bytes >= SIZE_LIMIT
        if policy != EVICTION:
            assert decided.producers == {HOLD: "held", EXCEPTION: "failed"}[policy] and not decided.evictions
            connected_then_refused(pulsar_broker, client, topic, producer, policy)
            time.sleep(1.5)  # more checks: nothing is evicted under a producer policy
            assert backlog_entries(pulsar_broker, topic) == MESSAGES
            assert evictions(pulsar_broker, topic, "size") == 0
            return
        (evicted,) = decided.evictions
        assert evicted.subscription == "slow" and 0 < evicted.entries < MESSAGES
        after = wait_until("Pulsar evicts the backlog",
                           lambda: (n := backlog_entries(pulsar_broker, topic)) < MESSAGES and n + 1)
        # one skip of exactly the entries quotaplane computed (upstream stops when the same cursor
        # is the slowest again), counted once, and the next checks find the topic within its quota
        assert after - 1 == MESSAGES - evicted.entries
        time.sleep(1.5)
        assert backlog_entries(pulsar_broker, topic) == MESSAGES - evicted.entries
        assert evictions(pulsar_broker, topic, "size") == 1.0
        later = rounds.collect(now_ms())
        assert decide(later, later).exceeded is None
        assert later.topics[0].backlog_size_bytes < SIZE_LIMIT
        size_before, size_after = before.topics[0].backlog_size_bytes, later.topics[0].backlog_size_bytes
        print(f"size eviction: {MESSAGES} entries / {size_before} B, limit {SIZE_LIMIT} B: quotaplane skips "
              f"{evicted.entries} entries aiming at {evicted.bytes} B; Pulsar skipped "
              f"{MESSAGES - backlog_entries(pulsar_broker, topic)} entries, backlog now {size_after} B")
        producer.send(b"still accepted")  # eviction never touches producers
    finally:
        client.close()


@pytest.mark.parametrize("policy", [HOLD, EXCEPTION, EVICTION])
def test_time_quota(pulsar_broker: PulsarTarget, policy: str) -> None:
    ns = fresh_namespace(pulsar_broker, "time")
    topic = f"persistent://{ns}/aged"
    client = pulsar_broker.client()
    try:
        subscribe(client, topic)
        published = produce(client, topic, MESSAGES // 2)
        # unloading closes the topic's ledger: its close time is what the estimate mode ages the
        # backlog from (preciseTimeBasedBacklogQuotaCheck=false), and what the collector reads back
        pulsar_broker.call("PUT", f"admin/v2/{topic.replace('://', '/')}/unload")
        producer = client.create_producer(topic, batching_enabled=False, send_timeout_millis=3000)
        rounds = watch(pulsar_broker, ns)
        closed = rounds.collect(now_ms()).topics[0].subscriptions[0].oldest_ledger_close_ts_ms
        assert closed is not None and closed >= published[-1]
        time.sleep(max(0.0, (closed + TIME_LIMIT * 1000 + 600 - now_ms()) / 1000))
        before = rounds.collect(now_ms())
        set_topic_quota(pulsar_broker, topic, "message_age", TIME_LIMIT, policy)

        def in_force() -> Collection | None:
            round_ = rounds.collect(now_ms())
            return round_ if round_.topics[0].limit_time == TIME_LIMIT else None

        with_quota = wait_until("the topic policy is in force", in_force, timeout_s=15)
        decided = decide(before, with_quota)
        assert (decided.exceeded, decided.action) == ("time", policy)
        assert decided.backlog_age_seconds is not None and decided.backlog_age_seconds >= TIME_LIMIT
        if policy != EVICTION:
            assert decided.producers == {HOLD: "held", EXCEPTION: "failed"}[policy]
            connected_then_refused(pulsar_broker, client, topic, producer, policy)
            assert backlog_entries(pulsar_broker, topic) == MESSAGES // 2
            assert evictions(pulsar_broker, topic, "time") == 0
            return
        (evicted,) = decided.evictions
        assert evicted.subscription == "slow" and 0 < evicted.entries <= MESSAGES // 2
        wait_until("Pulsar expires the backlog", lambda: backlog_entries(pulsar_broker, topic) == 0)
        # Pulsar expires every message older than 0.9 x the limit at its check: all of them here, since
        # all were published more than 2 s before it; quotaplane's count assumes the backlog was published
        # evenly up to the tick (docs/backlog.md, "Eviction"), so it estimates a share of them
        time.sleep(1.5)
        runs = evictions(pulsar_broker, topic, "time")
        assert runs >= 1.0
        later = rounds.collect(now_ms())
        assert decide(later, later).exceeded is None and later.topics[0].oldest_age_seconds == -1
        print(f"time eviction: quotaplane estimated {evicted.entries} of {MESSAGES // 2} entries at "
              f"{decided.backlog_age_seconds} s; Pulsar expired {MESSAGES // 2}; eviction runs {runs:g}")
    finally:
        client.close()
