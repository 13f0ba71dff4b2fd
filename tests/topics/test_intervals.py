"""Per topic and interval totals and the dropped-request log (reference)."""

from __future__ import annotations

from quotaplane.topics.config import parse_topics_config
from quotaplane.topics.engine.evaluate import TopicRequest, evaluate
from quotaplane.topics.engine.intervals import dropped_log, interval_start, topic_intervals

CONFIG = parse_topics_config({"total.bytes.in.per.sec.threshold": "0", "message.max.bytes": "100",
                              "topic.a.bytes.in.per.sec.threshold@-1000": "0"})


def test_interval_start_is_aligned_to_the_epoch_also_before_it() -> None:
    assert [interval_start(t, 1000) for t in (0, 999, 1000, -1, -1000, -1001)] == [0, 0, 1000, -1000, -1000,
                                                                                 -2000]


def test_intervals_split_bytes_by_decision_and_average_over_the_interval() -> None:
    requests = [TopicRequest(0, 1, "a", 50), TopicRequest(4000, 1, "a", 150), TopicRequest(5000, 1, "a", 30),
                TopicRequest(9999, 1, "a", 20), TopicRequest(10_000, 1, "a", 7)]
    ev = evaluate(CONFIG, requests)
    assert [d.decision for d in ev.decisions] == ["accepted", "error", "throttled", "throttled", "throttled"]
    rows = topic_intervals(ev.decisions, 10_000)
    keys = ("interval_start_ms", "requests", "accepted_bytes", "throttled_bytes", "error_bytes")
    assert [tuple(r[k] for k in keys) for r in rows] == [(0, 4, 50, 50, 150), (10_000, 1, 0, 7, 0)]
    first = rows[0]
    assert (first["accepted_rate"], first["throttled_rate"], first["error_rate"]) == (5.0, 5.0, 15.0)
    assert (first["accepted_requests"], first["throttled_requests"], first["error_requests"]) == (1, 2, 1)
    assert first["max_total_rate"] == first["max_topic_rate"] == 10.0
    assert (first["min_topic_threshold"], first["max_topic_threshold"]) == (0, 0)


def test_dropped_log_has_the_reason_and_a_message_per_dropped_request() -> None:
    ev = evaluate(CONFIG, [TopicRequest(0, 1, "a", 50), TopicRequest(1, 1, "b", 101),
                           TopicRequest(5000, 1, "a", 1), TopicRequest(5000, 1, "b", 1)])
    log = dropped_log(ev.decisions, CONFIG)
    assert [(r["topic"], r["decision"], r["reason"], r["message"]) for r in log] == [
        ("b", "error", "message_too_large", "record batch of 101 bytes exceeds message.max.bytes=100"),
        ("a", "throttled", "bytes_in_quota_exceeded", "broker bytes-in rate above "
         "total.bytes.in.per.sec.threshold=0 and topic a bytes-in rate above its explicit threshold 0"),
    ]
