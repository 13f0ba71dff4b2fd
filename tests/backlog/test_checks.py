"""The check of one topic at one tick, at every boundary (Pulsar `BrokerService.monitorBacklogQuota`)."""

from __future__ import annotations

import pytest

from quotaplane.backlog.engine.checks import (
    action_of,
    age_base_ms,
    age_seconds,
    exceeded_quota,
    size_exceeded,
    time_exceeded,
)
from quotaplane.backlog.engine.oldest import oldest_subscription
from tests.backlog.builders import quotas, snap


@pytest.mark.parametrize(("size", "limit", "expected"), [
    (99, 100, False), (100, 100, True), (101, 100, True),  # >= the limit
    (0, 0, True), (5, 0, True),  # a 0 limit: every backlog, even empty, reaches it (upstream)
    (10**12, -1, False), (10**12, -5, False),  # negative: no limit
])
def test_size_is_exceeded_at_or_above_the_limit(size: int, limit: int, expected: bool) -> None:
    assert size_exceeded(size, limit) is expected


@pytest.mark.parametrize(("elapsed_ms", "limit_s", "expected"), [
    (59_999, 60, False), (60_000, 60, False), (60_001, 60, True),  # strictly older, in ms
    (10**9, 0, False), (10**9, -1, False),  # <= 0: no limit
    (1_001, 1, True), (1_000, 1, False),
])
def test_time_is_exceeded_only_strictly_past_the_limit(elapsed_ms: int, limit_s: int, expected: bool) -> None:
    tick = 1_000_000_000
    assert time_exceeded(tick, tick - elapsed_ms, limit_s) is expected


def test_time_is_not_exceeded_without_an_age() -> None:
    assert time_exceeded(10**9, None, 1) is False


@pytest.mark.parametrize(("elapsed_ms", "seconds"), [
    (0, 0), (999, 0), (1_000, 1), (1_999, 1), (60_500, 60), (-1, 0), (-999, 0), (-1_000, -1), (-1_500, -1),
])
def test_age_is_whole_seconds_truncated_toward_zero(elapsed_ms: int, seconds: int) -> None:
    assert age_seconds(1_000_000 + elapsed_ms, 1_000_000) == seconds


def test_age_can_show_the_limit_while_time_is_already_exceeded() -> None:
    # 60.5 s old with a 60 s limit: the age shows 60, the check (in ms) says exceeded.
    assert age_seconds(60_500, 0) == 60 and time_exceeded(60_500, 0, 60)


@pytest.mark.parametrize(("precise", "close", "base"), [
    (True, None, 1_000), (True, 5_000, 1_000),  # precise: the publish time, always
    (False, 5_000, 5_000),  # estimate: the ledger close time
    (False, None, None), (False, 0, None), (False, -3, None),  # ledger open: no estimate
])
def test_precise_uses_publish_time_estimate_the_ledger_close_time(precise: bool, close: int | None,
                                                                   base: int | None) -> None:
    assert age_base_ms(1_000, close, precise) == base


def test_no_backlog_has_no_age_in_either_mode() -> None:
    assert age_base_ms(None, 5_000, False) is None and age_base_ms(None, None, True) is None


def test_size_is_checked_first_and_time_only_when_size_is_not_exceeded() -> None:
    q = quotas(size_limit=100, time_limit=10, size_policy="consumer_backlog_eviction",
               time_policy="producer_exception")
    assert exceeded_quota(100_000, 100, 0, q) == "size"  # both exceeded: size wins
    assert action_of("size", q) == "consumer_backlog_eviction"
    assert exceeded_quota(100_000, 99, 0, q) == "time"
    assert action_of("time", q) == "producer_exception"
    assert exceeded_quota(10_000, 99, 0, q) is None and action_of(None, q) is None


def test_the_oldest_subscription_holds_the_topic_backlog() -> None:
    rows = [snap(sub="b", publish=5, size=10), snap(sub="a", publish=7, size=99), snap(sub="c", entries=0)]
    assert oldest_subscription(rows).subscription == "b"


def test_oldest_ties_go_to_the_larger_backlog_then_the_name() -> None:
    rows = [snap(sub="b", publish=5, size=10), snap(sub="a", publish=5, size=10),
            snap(sub="c", publish=5, size=9)]
    assert oldest_subscription(rows).subscription == "a"
    rows.append(snap(sub="z", publish=5, size=11))
    assert oldest_subscription(rows).subscription == "z"


def test_no_subscription_with_a_backlog_means_no_oldest() -> None:
    assert oldest_subscription([snap(sub="a", entries=0, size=0)]) is None
    assert oldest_subscription([]) is None
