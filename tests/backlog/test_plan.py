"""The backlog stage's plan: one shuffle and one sort for every table, whatever the mode.

`decided_rows` shuffles the snapshots once (by topic) and sorts them once (by topic, tick,
subscription); its three windows, the quota lookups and the filters and projections of the checks,
evictions and per-topic totals all run on that order (docs: `quotaplane.backlog.spark.evaluate`).
The report's series are one more aggregation (one shuffle, hash-based). A change that adds a pass
over the rows fails here.
"""

from __future__ import annotations

import pytest

from quotaplane.backlog.config import parse_backlog_policies
from quotaplane.backlog.records import BACKLOG_SNAPSHOTS
from quotaplane.backlog.spark import resolve
from quotaplane.backlog.spark.evaluate import decided_rows, evaluation
from quotaplane.backlog.spark.report_data import series_frame
from tests.support.differential import collect_tables, records_frame
from tests.support.plans import (
    PYTHON_GROUPS,
    SHUFFLE,
    SORT,
    SORT_AGGREGATE,
    WINDOW,
    describe,
    operators,
)

A = "persistent://t/ns/a"
ROWS = [
    {"ts_ms": 100_000, "topic": A, "subscription": "s", "backlog_size_bytes": 5000, "backlog_entries": 50,
     "oldest_unacked_publish_ts_ms": 10_000, "oldest_unacked_ledger_close_ts_ms": 20_000},
    {"ts_ms": 100_000, "topic": A, "subscription": "t", "backlog_size_bytes": 10, "backlog_entries": 1,
     "oldest_unacked_publish_ts_ms": 90_000, "oldest_unacked_ledger_close_ts_ms": 95_000},
    {"ts_ms": 200_000, "topic": "persistent://t/ns/p-partition-1", "subscription": "s",
     "backlog_size_bytes": 0, "backlog_entries": 0, "partitioned_topic": "persistent://t/ns/p"},
]


def _policies(precise: bool) -> object:
    return parse_backlog_policies({
        "broker": {"preciseTimeBasedBacklogQuotaCheck": precise,
                   "backlogQuotaDefaultRetentionPolicy": "consumer_backlog_eviction"},
        "namespaces": {"t/ns": {"message_age": {"limitTime": 5}}},
        "topics": {"persistent://t/ns/p": {"destination_storage": {"limitSize": 0}}}})


@pytest.mark.spark
@pytest.mark.parametrize("precise", [False, True])
def test_every_table_is_one_shuffle_and_one_sort(spark, precise: bool) -> None:
    result = evaluation(decided_rows(records_frame(spark, ROWS, BACKLOG_SNAPSHOTS), _policies(precise)))
    # Exchange: the repartition by topic; Sort: by (topic, ts_ms, subscription), for the windows by
    # (topic, ts_ms, subscription) (duplicates), (topic, ts_ms) (group rules, oldest subscription,
    # eviction stop) and topic in (ts_ms, subscription) order (counters, totals). The evictions do
    # not read the counters: the optimizer drops that window.
    for name, df, windows in (("rows", result.rows, 3), ("checks", result.checks, 3),
                              ("evictions", result.evictions, 2), ("totals", result.totals, 3)):
        ops = operators(df)
        assert (ops[SHUFFLE], ops[SORT], ops[WINDOW]) == (1, 1, windows), f"{name}: {describe(df)}"
        assert ops[SORT_AGGREGATE] == ops[PYTHON_GROUPS] == ops["BroadcastExchange"] == 0, describe(df)


@pytest.mark.spark
def test_the_report_series_are_one_hash_aggregation_of_the_checks(spark) -> None:
    checks = evaluation(decided_rows(records_frame(spark, ROWS, BACKLOG_SNAPSHOTS), _policies(False))).checks
    df = series_frame(checks, 100_000, 200_000, [A])
    ops = operators(df)
    # the rows' shuffle and sort, then the grouping sets: one Expand, one shuffle of partial
    # aggregates, hash-based (fixed-width buffers)
    assert (ops[SHUFFLE], ops[SORT], ops["Expand"], ops[SORT_AGGREGATE]) == (2, 1, 1, 0), describe(df)
    assert ops["HashAggregate"] == 2, describe(df)


@pytest.mark.spark
def test_large_quota_levels_are_joined_and_give_the_same_rows(spark, monkeypatch) -> None:
    frame = records_frame(spark, ROWS, BACKLOG_SNAPSHOTS)
    looked_up = evaluation(decided_rows(frame, _policies(False)))
    monkeypatch.setattr(resolve, "MAP_LOOKUP_MAX", 0)
    joined = evaluation(decided_rows(frame, _policies(False)))
    ops = operators(joined.rows)
    # one broadcast per configured level (topics and namespaces), still one shuffle and one sort
    assert (ops[SHUFFLE], ops[SORT], ops["BroadcastExchange"]) == (1, 1, 2), describe(joined.rows)
    a = collect_tables({"checks": looked_up.checks, "evictions": looked_up.evictions})
    b = collect_tables({"checks": joined.checks, "evictions": joined.evictions})
    key = lambda r: sorted(r.items(), key=str)  # noqa: E731
    for name in a:
        assert sorted(map(key, a[name]), key=str) == sorted(map(key, b[name]), key=str), name
