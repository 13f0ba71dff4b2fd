"""The reference engine's JSON Lines reader: row rules, group rules, and the field it names."""

from __future__ import annotations

import json

import pytest

from quotaplane.backlog.engine.reader import parse_snapshots
from quotaplane.backlog.names import is_topic_name, namespace_of, partition_index
from quotaplane.core.errors import InputError

GOOD = {"ts_ms": 1000, "topic": "persistent://t/ns/a", "subscription": "s", "backlog_size_bytes": 10,
        "backlog_entries": 1, "oldest_unacked_publish_ts_ms": 500}


def _read(*records: dict | str) -> list:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    return list(parse_snapshots(lines, "f.jsonl"))


def test_a_valid_line_reads_with_iso_times_and_optional_fields() -> None:
    [s] = _read({**GOOD, "ts_ms": "1970-01-01T00:00:01Z", "oldest_unacked_ledger_close_ts_ms": None})
    assert (s.ts_ms, s.oldest_unacked_ledger_close_ts_ms, s.partitioned_topic) == (1000, None, None)


@pytest.mark.parametrize(("change", "field", "rule"), [
    ({"topic": "t/ns/a"}, "topic", "topic must be persistent://tenant/namespace/name"),
    ({"subscription": ""}, "subscription", "subscription must not be empty"),
    ({"backlog_size_bytes": -1}, "backlog_size_bytes", "must not be negative"),
    ({"backlog_entries": -1}, "backlog_entries", "must not be negative"),
    ({"backlog_entries": 0}, "backlog_entries", "exactly when oldest_unacked_publish_ts_ms is set"),
    ({"oldest_unacked_publish_ts_ms": None}, "backlog_entries", "exactly when"),
    ({"partitioned_topic": "persistent://t/other/p"}, "partitioned_topic", "in the same namespace"),
    ({"partitioned_topic": ""}, "partitioned_topic", "persistent://tenant/namespace/name"),
    ({"ts_ms": "soon"}, "ts_ms", "epoch milliseconds"),
    ({"subscription": None}, "subscription", "missing required field"),
])
def test_bad_lines_name_the_line_the_field_and_the_rule(change: dict, field: str, rule: str) -> None:
    with pytest.raises(InputError) as info:
        _read(GOOD, {**GOOD, "subscription": "t", **change})
    assert info.value.where == "f.jsonl:2" and info.value.field == field and rule in info.value.rule


def test_a_subscription_twice_at_one_tick_is_rejected() -> None:
    with pytest.raises(InputError, match=r"f.jsonl:2: field 'subscription'='s': duplicate .* line 1"):
        _read(GOOD, GOOD)
    assert len(_read(GOOD, {**GOOD, "ts_ms": 2000})) == 2


def test_rows_of_one_tick_and_topic_must_agree_on_the_partitioned_topic() -> None:
    with pytest.raises(InputError, match="disagree on partitioned_topic"):
        _read(GOOD, {**GOOD, "subscription": "t", "partitioned_topic": "persistent://t/ns/p"})


def test_unparsable_lines_are_errors_and_blank_lines_are_skipped() -> None:
    with pytest.raises(InputError, match="unparsable record"):
        _read(GOOD, "{not json")
    with pytest.raises(InputError, match="not a JSON object"):
        _read("[1]")
    assert len(_read(GOOD, "", "  ")) == 1


def test_topic_names() -> None:
    assert is_topic_name("persistent://t/ns/a") and not is_topic_name("persistent://t/ns/a/b")
    assert not is_topic_name("non-persistent://t/ns/a") and not is_topic_name("persistent://t/ns/a\n")
    assert not is_topic_name("persistent://t/n s/a") and not is_topic_name("persistent://t//a")
    assert namespace_of("persistent://t/ns/a") == "t/ns"
    assert partition_index("persistent://t/ns/a-partition-12") == 12
    assert partition_index("persistent://t/ns/a-partition-x") is None
    assert partition_index("x-partition-") is None
    with pytest.raises(ValueError, match="not a topic name"):
        namespace_of("t/ns/a")
