"""Configuration of topic bytes-in quotas: keys, values, defaults, and the sum rule of thresholds."""

from __future__ import annotations

from pathlib import Path

import pytest

from quotaplane.core.errors import ConfigError, ConfigErrors
from quotaplane.topics.config import (
    DEFAULT_INTERVAL_MS,
    DEFAULT_MESSAGE_MAX_BYTES,
    change_error,
    load_topics_config,
    parse_topics_config,
)

TOTAL = "total.bytes.in.per.sec.threshold"


def errors_of(props: dict[str, str]) -> list[str]:
    with pytest.raises(ConfigErrors) as info:
        parse_topics_config(props)
    return [str(e) for e in info.value.errors]


def test_defaults() -> None:
    config = parse_topics_config({TOTAL: "1000"})
    assert config.total_threshold == 1000
    assert config.message_max_bytes == DEFAULT_MESSAGE_MAX_BYTES == 1048588
    assert config.interval_ms == DEFAULT_INTERVAL_MS == 60_000
    assert config.changes == ()


def test_the_total_is_required() -> None:
    assert errors_of({}) == ["total.bytes.in.per.sec.threshold=: missing required property "
                             "(the broker-wide bytes-in threshold in bytes/s)"]


@pytest.mark.parametrize(("key", "value", "message"), [
    (TOTAL, "-1", "total.bytes.in.per.sec.threshold=-1: must be at least 0"),
    (TOTAL, "1.5", "total.bytes.in.per.sec.threshold=1.5: must be a whole number"),
    (TOTAL, "9223372036854775808", "total.bytes.in.per.sec.threshold=9223372036854775808: must be at most "
     "9223372036854775807"),
    ("message.max.bytes", "2147483648", "message.max.bytes=2147483648: must be at most 2147483647"),
    ("message.max.bytes", "-1", "message.max.bytes=-1: must be at least 0"),
    ("quotaplane.topics.interval.ms", "0", "quotaplane.topics.interval.ms=0: must be at least 1"),
    ("topic.a.bytes.in.per.sec.threshold", "-5", "topic.a.bytes.in.per.sec.threshold=-5: must be at least 0"),
    ("topic.a.bytes.in.per.sec.threshold", "", "topic.a.bytes.in.per.sec.threshold=: must be a whole number"),
])
def test_bad_values_name_the_key_the_value_and_the_rule(key: str, value: str, message: str) -> None:
    props = {TOTAL: "1000", key: value}
    assert message in errors_of(props)


def test_boundary_values_are_accepted() -> None:
    config = parse_topics_config({TOTAL: "0", "message.max.bytes": "0", "quotaplane.topics.interval.ms": "1",
                                  "topic.a.bytes.in.per.sec.threshold": "0"})
    assert (config.total_threshold, config.message_max_bytes, config.interval_ms) == (0, 0, 1)
    assert config.initial_thresholds == {"a": 0}
    top = parse_topics_config({TOTAL: "9223372036854775807", "message.max.bytes": " 2147483647 "})
    assert (top.total_threshold, top.message_max_bytes) == (2**63 - 1, 2**31 - 1)


def test_unknown_keys_are_errors_with_a_hint() -> None:
    assert errors_of({TOTAL: "1", "total.bytes.in.per.sec.treshold": "5"}) == [
        "total.bytes.in.per.sec.treshold=5: unknown property "
        "(did you mean total.bytes.in.per.sec.threshold?)"]
    assert errors_of({TOTAL: "1", "topic.a.bytes.out.per.sec.threshold": "5"}) == [
        "topic.a.bytes.out.per.sec.threshold=5: unknown topic property (the form is "
        "topic.<name>.bytes.in.per.sec.threshold[@<epoch ms>])"]


def test_topic_names_follow_kafka_rules_and_may_contain_dots() -> None:
    config = parse_topics_config({TOTAL: "10", "topic.orders.eu-1_x.bytes.in.per.sec.threshold": "3"})
    assert config.initial_thresholds == {"orders.eu-1_x": 3}
    [message] = errors_of({TOTAL: "10", "topic.a b.bytes.in.per.sec.threshold": "3"})
    assert message.startswith("topic.a b.bytes.in.per.sec.threshold=3: illegal topic name 'a b'")
    assert errors_of({TOTAL: "10", "topic...bytes.in.per.sec.threshold": "3"})[0].startswith(
        "topic...bytes.in.per.sec.threshold=3: illegal topic name '.'")


def test_timed_keys_need_epoch_millis_and_only_topics_have_them() -> None:
    assert errors_of({TOTAL: "10", "topic.a.bytes.in.per.sec.threshold@soon": "3"}) == [
        "topic.a.bytes.in.per.sec.threshold@soon=3: the change time 'soon' after '@' must be "
        "epoch milliseconds"]
    assert errors_of({TOTAL: "10", "topic.a.bytes.in.per.sec.threshold@9223372036854775808": "3"}) == [
        "topic.a.bytes.in.per.sec.threshold@9223372036854775808=3: the change time "
        "9223372036854775808 is out of the range of a LONG"]
    assert errors_of({TOTAL: "10", "total.bytes.in.per.sec.threshold@5": "3"}) == [
        "total.bytes.in.per.sec.threshold@5=3: only topic thresholds can have timed changes "
        "(use topic.<name>.bytes.in.per.sec.threshold[@<epoch ms>])"]


def test_explicit_thresholds_may_sum_to_the_total_exactly() -> None:
    config = parse_topics_config({TOTAL: "1000", "topic.a.bytes.in.per.sec.threshold": "600",
                                  "topic.b.bytes.in.per.sec.threshold": "400"})
    assert config.initial_thresholds == {"a": 600, "b": 400}
    assert [c.explicit_sum for c in config.changes] == [600, 1000]


def test_plain_thresholds_above_the_total_are_errors_naming_topic_value_and_sums() -> None:
    assert errors_of({TOTAL: "1000", "topic.a.bytes.in.per.sec.threshold": "600",
                      "topic.b.bytes.in.per.sec.threshold": "401"}) == [
        "topic.b.bytes.in.per.sec.threshold=401: rejected: topic b with the new value 401 makes the explicit "
        "topic thresholds sum to 1001, above total.bytes.in.per.sec.threshold=1000 (the other explicit "
        "thresholds sum to 600)"]


def test_timed_changes_are_applied_in_time_then_file_order_and_rejected_ones_kept_out() -> None:
    config = parse_topics_config({
        TOTAL: "1000",
        "topic.a.bytes.in.per.sec.threshold@200": "700",      # a 700 + b 400 = 1100: rejected
        "topic.a.bytes.in.per.sec.threshold": "300",
        "topic.b.bytes.in.per.sec.threshold@100": "400",      # sum 700
        "topic.b.bytes.in.per.sec.threshold@300": "",         # b removed, sum 300
        "topic.a.bytes.in.per.sec.threshold@300": "700",      # now fits: sum 700
        "topic.c.bytes.in.per.sec.threshold@300": "301",      # 700 + 301 = 1001: rejected
    })
    assert [(c.key, c.accepted, c.explicit_sum) for c in config.changes] == [
        ("topic.a.bytes.in.per.sec.threshold", True, 300),
        ("topic.b.bytes.in.per.sec.threshold@100", True, 700),
        ("topic.a.bytes.in.per.sec.threshold@200", False, 1100),
        ("topic.b.bytes.in.per.sec.threshold@300", True, 300),
        ("topic.a.bytes.in.per.sec.threshold@300", True, 700),
        ("topic.c.bytes.in.per.sec.threshold@300", False, 1001),
    ]
    [rejected, _] = config.rejected_changes
    assert str(change_error(rejected)) == (
        "topic.a.bytes.in.per.sec.threshold@200=700: rejected: topic a with the new value 700 makes the "
        "explicit topic thresholds sum to 1100, above total.bytes.in.per.sec.threshold=1000 (the other "
        "explicit thresholds sum to 400)")
    assert config.initial_thresholds == {"a": 300}


def test_several_errors_are_reported_together() -> None:
    messages = errors_of({TOTAL: "x", "message.max.bytes": "y", "bogus": "1"})
    assert len(messages) == 3


def test_load_reads_java_properties_syntax(tmp_path: Path) -> None:
    path = tmp_path / "topics.properties"
    path.write_text("# broker\ntotal.bytes.in.per.sec.threshold = 1000\n"
                    "topic.a.bytes.in.per.sec.threshold : 10\n"
                    "topic.a.bytes.in.per.sec.threshold@5000=\n")
    config = load_topics_config(path)
    assert [(c.topic, c.ts_ms, c.threshold) for c in config.changes] == [("a", None, 10), ("a", 5000, None)]
    with pytest.raises(ConfigError, match="cannot read the configuration file"):
        load_topics_config(tmp_path / "missing.properties")
