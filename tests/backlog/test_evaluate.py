"""Ticks over time: counters, topic stats, partitioned stats, namespace aggregation."""

from __future__ import annotations

from quotaplane.backlog.engine.evaluate import evaluate
from quotaplane.backlog.engine.stats import (
    broker_evictions,
    namespace_metrics,
    partitioned_stats,
    topic_metrics,
    topic_stats,
)
from tests.backlog.builders import TOPIC, policies, snap

EVICT = {"backlogQuotaDefaultLimitBytes": 1000, "backlogQuotaDefaultLimitSecond": 60,
         "backlogQuotaDefaultRetentionPolicy": "consumer_backlog_eviction",
         "preciseTimeBasedBacklogQuotaCheck": True}


def test_results_are_in_time_then_topic_order_with_cumulative_eviction_runs() -> None:
    rows = [
        snap(ts=3_000_000, size=2000, publish=2_999_000),  # size
        snap(ts=1_000_000, size=10, publish=0),  # time (1000 s old)
        snap(ts=2_000_000, size=10, publish=1_999_000),  # nothing
        snap(ts=1_000_000, topic="persistent://t/ns/0", size=2000, publish=999_000),
    ]
    results = evaluate(policies(EVICT), rows)
    assert [(r.ts_ms, r.topic) for r in results] == [
        (1_000_000, "persistent://t/ns/0"), (1_000_000, TOPIC), (2_000_000, TOPIC), (3_000_000, TOPIC)]
    a = [r for r in results if r.topic == TOPIC]
    assert [r.exceeded for r in a] == ["time", None, "size"]
    assert [(r.size_evictions_total, r.time_evictions_total) for r in a] == [(0, 1), (0, 1), (1, 1)]
    assert a[0].evictions[0].subscription == "s" and a[2].evictions[0].entries == 5  # (2000-900)*10/2000


def test_runs_count_even_when_nothing_would_be_skipped() -> None:
    # limit 0: an empty backlog reaches it; the eviction runs (and is counted) with nothing to skip
    results = evaluate(policies({**EVICT, "backlogQuotaDefaultLimitBytes": 0}),
                       [snap(ts=1000, entries=0, size=0), snap(ts=2000, entries=0, size=0)])
    assert [(r.exceeded, r.evictions, r.size_evictions_total) for r in results] == [
        ("size", (), 1), ("size", (), 2)]


def test_producer_policies_hold_or_fail_and_never_evict() -> None:
    held = evaluate(policies({"backlogQuotaDefaultLimitBytes": 1}), [snap(size=5)])[0]
    assert (held.action, held.producers, held.evictions, held.size_evictions_total) == (
        "producer_request_hold", "held", (), 0)
    fail = policies({"backlogQuotaDefaultLimitBytes": 1,
                     "backlogQuotaDefaultRetentionPolicy": "producer_exception"})
    failed = evaluate(fail, [snap(size=5)])[0]
    assert (failed.action, failed.producers) == ("producer_exception", "failed")


def test_topic_stats_come_from_the_last_tick() -> None:
    results = evaluate(policies(EVICT), [snap(ts=10_000, publish=0, sub="x"),
                                         snap(ts=20_000, publish=15_000, sub="y")])
    stats = topic_stats(results)[TOPIC]
    assert stats.as_dict() == {"backlogQuotaLimitSize": 1000, "backlogQuotaLimitTime": 60,
                               "oldestBacklogMessageAgeSeconds": 5,
                               "oldestBacklogMessageSubscriptionName": "y"}


def test_unknown_age_is_minus_one_without_a_subscription_name() -> None:
    estimate = {**EVICT, "preciseTimeBasedBacklogQuotaCheck": False}
    results = evaluate(policies(estimate), [snap(ts=10_000, publish=0, close=None, sub="x")])
    assert results[0].oldest_subscription == "x" and results[0].backlog_age_seconds is None
    stats = topic_stats(results)[TOPIC]
    assert (stats.oldestBacklogMessageAgeSeconds, stats.oldestBacklogMessageSubscriptionName) == (-1, None)


def _partition(i: int, age_s: int | None, sub: str, ts: int = 100_000):
    parent = "persistent://t/ns/p"
    topic = f"{parent}-partition-{i}"
    if age_s is None:
        return snap(ts=ts, topic=topic, parent=parent, sub=sub, entries=0, size=0)
    return snap(ts=ts, topic=topic, parent=parent, sub=sub, publish=ts - age_s * 1000)


def test_partitioned_stats_take_the_partition_with_the_largest_age() -> None:
    rows = [_partition(10, 30, "ten"), _partition(2, 50, "two"), _partition(1, 50, "one"),
            _partition(3, None, "none")]
    stats = partitioned_stats(evaluate(policies(EVICT), rows))["persistent://t/ns/p"]
    # ties keep the first partition in index order (1 before 2; 10 after 2, not before)
    assert (stats.oldestBacklogMessageAgeSeconds, stats.oldestBacklogMessageSubscriptionName) == (50, "one")
    assert (stats.backlogQuotaLimitSize, stats.backlogQuotaLimitTime) == (1000, 60)


def test_partitioned_stats_without_any_age_stay_unknown() -> None:
    stats = partitioned_stats(evaluate(policies(EVICT), [_partition(0, None, "a")]))["persistent://t/ns/p"]
    assert (stats.oldestBacklogMessageAgeSeconds, stats.oldestBacklogMessageSubscriptionName) == (-1, None)


def test_namespace_aggregation_sums_counts_and_takes_maxima_from_zero_and_minus_one() -> None:
    p = policies({"backlogQuotaDefaultRetentionPolicy": "consumer_backlog_eviction"},
                 topics={"persistent://t/ns/b": {"destination_storage": {"limitSize": 5}}})
    rows = [snap(ts=1, size=3, publish=0), snap(ts=1, topic="persistent://t/ns/b", size=7, publish=0),
            snap(ts=2, topic="persistent://t/ns/b", size=9, publish=0)]
    topics = topic_metrics(evaluate(p, rows))
    assert [(t.topic, t.size_evictions, t.backlog_age_seconds) for t in topics] == [
        (TOPIC, 0, -1), ("persistent://t/ns/b", 2, -1)]  # estimate mode, ledgers open: unknown age
    [ns] = namespace_metrics(topics)
    assert (ns.namespace, ns.backlog_size_bytes, ns.size_limit, ns.time_limit, ns.size_evictions) == (
        "t/ns", 12, 5, -1, 2)
    unlimited = namespace_metrics(topic_metrics(evaluate(policies(), rows[:1])))[0]
    assert (unlimited.size_limit, unlimited.time_limit) == (0, -1)  # upstream's starting values
    assert broker_evictions(topics) == {"size": 2, "time": 0}
