"""The admin API's answers turned into the collector's values (quotaplane.live.pulsar.answers), and a
round turned into rows and policies (quotaplane.live.pulsar.rows): pure functions, at their boundaries."""

from __future__ import annotations

import pytest

from quotaplane.backlog.config import Quota, QuotaSet
from quotaplane.backlog.records import BACKLOG_SNAPSHOTS
from quotaplane.core.errors import ConfigError
from quotaplane.live.pulsar import answers
from quotaplane.live.pulsar.collect import check_namespaces, is_system_topic, parent_of
from quotaplane.live.pulsar.model import (
    Collection,
    Ledger,
    Position,
    PulsarError,
    SubscriptionBacklog,
    TopicBacklog,
)
from quotaplane.live.pulsar.rows import backlog_policies, policies_document, snapshot_rows

T = "persistent://public/default/t"
STATS = {"backlogSize": 270, "backlogQuotaLimitSize": 1000, "backlogQuotaLimitTime": -1,
         "oldestBacklogMessageAgeSeconds": 4, "oldestBacklogMessageSubscriptionName": "slow",
         "publishers": [{"producerName": "p"}],
         "subscriptions": {"slow": {"msgBacklog": 2, "backlogSize": 270,
                                    "earliestMsgPublishTimeInBacklog": 1000,
                                    "isDurable": True},
                           "done": {"msgBacklog": 0, "backlogSize": 0, "earliestMsgPublishTimeInBacklog": -1,
                                    "isDurable": True}}}


def malformed(value: object) -> str:
    assert isinstance(value, PulsarError) and value.reason == "MALFORMED_ANSWER", value
    return value.message


def test_a_topic_listing_must_name_topics_of_its_namespace() -> None:
    assert answers.topic_list([f"{T}-b", T], "public/default", "ns") == [T, f"{T}-b"]
    assert "must be a JSON list" in malformed(answers.topic_list({"a": 1}, "public/default", "ns"))
    assert "persistent://public/default/<name>" in malformed(
        answers.topic_list(["persistent://other/ns/t"], "public/default", "ns"))


def test_a_backlog_quota_map() -> None:
    assert answers.quota_set({}, "w") == QuotaSet()
    quotas = answers.quota_set({"destination_storage": {"limit": -1, "limitSize": 10, "limitTime": -1,
                                                        "policy": "producer_exception"},
                                "message_age": {"limitSize": -1, "limitTime": 60,
                                                "policy": "consumer_backlog_eviction"}}, "w")
    assert quotas == QuotaSet(Quota(10, "producer_exception"), Quota(60, "consumer_backlog_eviction"))
    # the deprecated `limit` of older brokers stands for limitSize
    assert answers.quota_set({"destination_storage": {"limit": 7, "policy": "producer_request_hold"}},
                             "w").size == Quota(7, "producer_request_hold")
    assert malformed(answers.quota_set({"message_age": {"limitTime": "60", "policy": "producer_exception"}},
                                       "w")) == \
        'backlogQuotaMap.message_age.limitTime="60": must be a whole number'
    assert "must be one of" in malformed(answers.quota_set(
        {"message_age": {"limitTime": 1, "policy": "drop"}}, "w"))
    assert "unknown backlog quota type" in malformed(answers.quota_set({"other": {}}, "w"))


LEDGERS = [Ledger(3, 10, 1000, 111), Ledger(5, 4, 400, 222), Ledger(8, 0, 0, None)]


@pytest.mark.parametrize(("mark_delete", "ledger"), [
    (Position(3, -1), 3),  # nothing acknowledged: the first ledger
    (Position(3, 8), 3),  # one entry of ledger 3 left
    (Position(3, 9), 5),  # ledger 3 fully acknowledged: the next one
    (Position(4, 0), 5),  # a ledger already trimmed: the next one
    (Position(5, 3), 8),  # into the open ledger
    (Position(8, 2), 8),  # in the open ledger
    (Position(9, 0), None),
])
def test_the_ledger_holding_the_oldest_unacknowledged_entry(mark_delete: Position,
                                                            ledger: int | None) -> None:
    found = answers.oldest_ledger(LEDGERS, mark_delete)
    assert (found.ledger_id if found else None) == ledger


def test_internal_stats_give_the_cursors_and_internal_info_the_ledgers() -> None:
    stats = {"ledgers": [], "cursors": {"slow": {"markDeletePosition": "5:1"}}}
    assert answers.cursor_positions(stats, "w") == {"slow": Position(5, 1)}
    assert "must be a position ledger:entry" in malformed(
        answers.cursor_positions({"cursors": {"slow": {"markDeletePosition": "x"}}}, "w"))
    # what Pulsar 4.2 answers after a topic's ledger was closed by an unload: the open one has no
    # entries (its `timestamp` is its creation time)
    info = {"ledgers": [{"ledgerId": 86, "entries": 3, "size": 408, "timestamp": 222, "isOffloaded": False},
                        {"ledgerId": 87, "timestamp": 333, "isOffloaded": False}]}
    assert answers.ledgers(info, "w") == [Ledger(86, 3, 408, 222), Ledger(87, 0, 0, None)]
    # the last ledger is the one being written even when its metadata has entries
    assert answers.ledgers({"ledgers": [{"ledgerId": 9, "entries": 1, "size": 5, "timestamp": 7}]}, "w") == [
        Ledger(9, 1, 5, None)]
    assert "must be a whole number" in malformed(
        answers.ledgers({"ledgers": [{"ledgerId": 1, "entries": 2, "timestamp": "x"}]}, "w"))


def test_topic_stats() -> None:
    read = answers.topic_backlog(STATS, T, None, 5, [Ledger(5, 4, 400, 222)], {"slow": Position(5, 1)})
    assert isinstance(read, TopicBacklog)
    assert (read.backlog_size_bytes, read.limit_size, read.limit_time, read.oldest_age_seconds,
            read.oldest_subscription, read.producers) == (270, 1000, -1, 4, "slow", 1)
    assert [s.name for s in read.subscriptions] == ["done", "slow"]
    assert read.subscriptions[1] == SubscriptionBacklog("slow", 2, 270, 1000, True, 222)
    assert read.subscriptions[0].oldest_publish_ts_ms is None  # Pulsar's -1: no backlog
    older = {k: v for k, v in STATS.items() if k != "backlogQuotaLimitSize"}
    assert malformed(answers.topic_backlog(older, T, None, 5)) == \
        "backlogQuotaLimitSize: missing (the broker predates PIP-323, Pulsar 3.2)"
    flagged = {**STATS, "subscriptions": {"s": {"msgBacklog": True, "backlogSize": 0}}}
    assert malformed(answers.topic_backlog(flagged, T, None, 5)) == \
        "subscriptions.s.msgBacklog=true: must be a whole number"
    assert "must be a JSON object" in malformed(answers.topic_backlog([], T, None, 5))


def test_broker_settings_keep_the_backlog_keys() -> None:
    assert answers.broker_settings({"clusterName": "c", "backlogQuotaCheckIntervalInSeconds": "1",
                                    "other": "x", "preciseTimeBasedBacklogQuotaCheck": None}) == {
        "clusterName": "c", "backlogQuotaCheckIntervalInSeconds": "1"}


def test_names() -> None:
    assert is_system_topic("persistent://public/default/__change_events")
    assert is_system_topic("persistent://public/default/t-sub__transaction_pending_ack")
    assert not is_system_topic(T)
    assert parent_of(f"{T}-partition-3", {T}) == T
    assert parent_of(f"{T}-partition-3", set()) is None and parent_of(f"{T}-partition-x", {T}) is None
    assert check_namespaces(["a/b", "c/d", "a/b"]) == ("a/b", "c/d")
    with pytest.raises(ConfigError, match="--pulsar-namespaces=a: each namespace must have the form"):
        check_namespaces(["a"])
    with pytest.raises(ConfigError, match="watch at least one"):
        check_namespaces([])


def collection(*subs: SubscriptionBacklog, broker: dict[str, str] | None = None, parent: str | None = None
               ) -> Collection:
    topic = TopicBacklog(f"{T}-partition-0" if parent else T, parent, 9, 0, -1, -1, -1, None, 0, subs)
    return Collection(10_000, ("public/default",), broker,
                      {"public/default": QuotaSet(Quota(5, "producer_exception"))},
                      {T: QuotaSet(None, Quota(60, "consumer_backlog_eviction"))}, (topic,))


def test_rows_follow_the_backlog_snapshots_schema() -> None:
    rows, dropped = snapshot_rows(collection(SubscriptionBacklog("a", 2, 270, 1000, True, 222),
                                             SubscriptionBacklog("b", 0, 0, None, True), parent=T))
    assert dropped == {}
    assert rows[0] == {"ts_ms": 10_000, "topic": f"{T}-partition-0", "subscription": "a",
                       "backlog_size_bytes": 270,
                       "backlog_entries": 2, "oldest_unacked_publish_ts_ms": 1000,
                       "oldest_unacked_ledger_close_ts_ms": 222, "partitioned_topic": T}
    assert [BACKLOG_SNAPSHOTS.broken_rule(r) for r in rows] == [None, None]
    assert set(rows[0]) == {f.name for f in BACKLOG_SNAPSHOTS.fields}


def test_a_row_breaking_a_rule_is_counted_not_kept() -> None:
    # entries acknowledged between Pulsar's two reads: a backlog without an oldest publish time
    rows, dropped = snapshot_rows(collection(SubscriptionBacklog("a", 3, 10, None, True)))
    assert rows == []
    assert dropped == {"backlog_entries > 0 exactly when oldest_unacked_publish_ts_ms is set": 1}


def test_the_policies_a_round_implies() -> None:
    broker = {"backlogQuotaDefaultLimitBytes": "-1",
              "backlogQuotaDefaultRetentionPolicy": "producer_request_hold",
              "preciseTimeBasedBacklogQuotaCheck": "true", "clusterName": "standalone",
              "backlogQuotaDefaultLimitGB": "-1.0", "backlogQuotaCheckIntervalInSeconds": "1"}
    round_ = collection(broker=broker)
    assert policies_document(round_)["namespaces"] == {
        "public/default": {"destination_storage": {"limitSize": 5, "policy": "producer_exception"}}}
    policies = backlog_policies(round_)
    assert not isinstance(policies, PulsarError)
    assert policies.broker.precise_time_check and policies.broker.check_interval_seconds == 1
    assert policies.topics[T].time == Quota(60, "consumer_backlog_eviction")
    # without the broker's settings (not readable): the caller's stand-ins, else Pulsar's defaults
    assert backlog_policies(collection(), {"clusterName": "c"}).broker.cluster_name == "c"
    bad = backlog_policies(collection(broker={**broker, "backlogQuotaCheckIntervalInSeconds": "0"}))
    assert isinstance(bad, PulsarError) and bad.line() == (
        "MALFORMED_ANSWER: backlog policies: broker.backlogQuotaCheckIntervalInSeconds=0: must be at least 1")


def test_an_error_is_one_line() -> None:
    error = PulsarError("HTTP_ERROR", "topic t", "HTTP 500:\n  boom\n" + "x" * 400)
    line = error.line()
    assert "\n" not in line and line.endswith("...")
    assert line.startswith("HTTP_ERROR: topic t: HTTP 500: boom x")
    assert error.renamed("TOPIC_NOT_FOUND").reason == "TOPIC_NOT_FOUND"
