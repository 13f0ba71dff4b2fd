"""Explicit thresholds and the default share, as of a time (spec: Low level design, 1)."""

from __future__ import annotations

from quotaplane.topics.config import parse_topics_config
from quotaplane.topics.engine.evaluate import TopicRequest, evaluate
from quotaplane.topics.engine.thresholds import Threshold, ThresholdSchedule, TopicSet

TOTAL = "total.bytes.in.per.sec.threshold"


def key(topic: str, ts: int | str | None = None) -> str:
    return f"topic.{topic}.bytes.in.per.sec.threshold" + ("" if ts is None else f"@{ts}")


def schedule(total: int, **props: str) -> ThresholdSchedule:
    return ThresholdSchedule(parse_topics_config({TOTAL: str(total), **props}))


def test_default_share_is_the_rest_divided_by_topics_without_one_rounded_down() -> None:
    s = ThresholdSchedule(parse_topics_config({TOTAL: "1000", key("a"): "300"}))
    assert s.threshold("a", 0, 4) == Threshold(300, "explicit")
    assert s.threshold("b", 0, 4) == Threshold(233, "default")  # (1000 - 300) // 3 = 233.33 -> 233
    assert s.threshold("b", 0, 2) == Threshold(700, "default")


def test_all_explicit_thresholds_at_the_total_leave_a_share_of_zero() -> None:
    s = ThresholdSchedule(parse_topics_config({TOTAL: "1000", key("a"): "1000"}))
    assert s.threshold("b", 0, 2) == Threshold(0, "default")


def test_a_change_applies_from_its_millisecond_and_a_removal_restores_the_share() -> None:
    s = ThresholdSchedule(parse_topics_config({TOTAL: "1000", key("a"): "100", key("a", 500): "400",
                                               key("a", 900): ""}))
    assert [s.explicit_at("a", t) for t in (-10**15, 499, 500, 899, 900)] == [100, 100, 400, 400, None]
    assert s.explicit_totals_at(499) == (100, 1)
    assert s.explicit_totals_at(900) == (0, 0)
    assert s.threshold("a", 900, 2) == Threshold(500, "default")


def test_several_changes_in_one_millisecond_end_in_the_last_one() -> None:
    s = ThresholdSchedule(parse_topics_config({TOTAL: "1000", key("a", 5): "100", key("a", "005"): "200"}))
    assert s.explicit_at("a", 5) == 200  # file order among equal times
    s = ThresholdSchedule(parse_topics_config({TOTAL: "1000", key("a", 5): "100", key("b", 5): "200",
                                               key("a", 6): "300"}))
    assert s.explicit_totals_at(5) == (300, 2)
    assert s.explicit_totals_at(6) == (500, 2)
    assert s.explicit_at("a", 4) is None


def test_rejected_changes_are_not_in_force() -> None:
    s = ThresholdSchedule(parse_topics_config({TOTAL: "1000", key("a"): "600", key("b", 10): "500"}))
    assert s.explicit_at("b", 10) is None
    assert s.configured == [(-(2**63), "a")]


def test_topic_set_grows_with_configured_and_seen_topics() -> None:
    s = ThresholdSchedule(parse_topics_config({TOTAL: "1000", key("a"): "100", key("b", 50): "",
                                               key("c", 100): "200"}))
    ts = TopicSet(s)
    ts.advance(0)
    assert ts.members == {"a"}
    ts.see("x")
    ts.advance(50)
    assert ts.members == {"a", "b", "x"}  # a removal still makes b a configured topic
    ts.advance(100)
    assert len(ts) == 4


def test_the_share_counts_configured_topics_not_yet_seen_on_the_broker() -> None:
    cfg = parse_topics_config({TOTAL: "900", key("a"): "0", key("b", 1000): ""})
    ev = evaluate(cfg, [TopicRequest(999, 1, "x", 1), TopicRequest(1000, 1, "x", 1)])
    assert [d.topic_threshold for d in ev.decisions] == [900, 450]  # b joins the set at 1000


def test_a_topic_appearing_changes_the_share_of_the_others_from_that_millisecond() -> None:
    cfg = parse_topics_config({TOTAL: "1000"})
    ev = evaluate(cfg, [TopicRequest(0, 1, "x", 1), TopicRequest(10, 1, "x", 1), TopicRequest(10, 1, "y", 1),
                        TopicRequest(9, 1, "x", 1)])
    assert [d.topic_threshold for d in ev.decisions] == [1000, 500, 500, 1000]


def test_the_default_share_example_of_the_docs() -> None:
    cfg = parse_topics_config({TOTAL: "1000", key("a"): "300", key("d", 10_000): "", key("a", 20_000): "800",
                               key("b", 20_000): "300"})
    assert [c.accepted for c in cfg.changes] == [True, True, True, False]
    requests = [TopicRequest(ts, broker, topic, 100) for ts, broker, topic in (
        (0, 1, "b"), (5000, 1, "c"), (5000, 1, "b"), (10_000, 1, "b"), (20_000, 1, "b"), (20_000, 2, "c"))]
    assert [d.topic_threshold for d in evaluate(cfg, requests).decisions] == [700, 350, 350, 233, 66, 100]


def test_the_schedule_views_agree_with_the_as_of_answers() -> None:
    s = schedule(1000, **{key("a"): "100", key("a", 5): "200", key("a", "005"): "", key("b", 5): "300",
                          key("a", 9): "400", key("b", 12): "", key("b", "012"): "250"})
    assert s.explicit_intervals() == [("a", -(2**63), 5, 100), ("a", 9, None, 400), ("b", 5, 12, 300),
                                      ("b", 12, None, 250)]
    times, sums, counts = s.steps()
    assert list(zip(sums, counts, strict=True)) == [(100, 1), (200, 1), (0, 0), (300, 1), (700, 2), (400, 1),
                                                     (650, 2)]
    for t in (-(2**63), 4, 5, 8, 9, 11, 12, 13):
        in_force = {topic: v for topic, lo, hi, v in s.explicit_intervals()
                    if lo <= t and (hi is None or t < hi)}
        assert in_force == {topic: s.explicit_at(topic, t) for topic in ("a", "b")
                            if s.explicit_at(topic, t) is not None}
        before = [i for i, at in enumerate(times) if at <= t]
        assert ((sums[before[-1]], counts[before[-1]]) if before else (0, 0)) == s.explicit_totals_at(t)
