"""Each broker's sums of its notices, added up, are the reference's comparison and timeline.

`aggregates.broker_aggregates` runs in a broker's `applyInPandas` group; `aggregates.merge` adds
the brokers' texts up in the driver. Brokers here have spans from seconds to days, so their own
timeline buckets differ from the run's.
"""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quotaplane.notices.engine.evaluate import (
    COMPARISON_COLUMNS,
    NOTICE_COLUMNS,
    REASON_ORDER,
    RECEIPTS,
    Notice,
    compare,
)
from quotaplane.notices.spark.aggregates import broker_aggregates, merge
from quotaplane.notices.timeline import BUCKET_CHOICES_MS, bucket_ms_for, timeline_rows

T0 = 1_700_000_000_123
SPANS_MS = (0, 999, 1_000, 299_999, 300_000, 3_600_000, 90_000_000, 31 * 86_400_000)


@st.composite
def notices(draw: Any) -> list[Notice]:
    out = []
    for broker in draw(st.lists(st.sampled_from(("b0", "b1", "b2", "")), unique=True, max_size=4)):
        span = draw(st.sampled_from(SPANS_MS))
        start = T0 + draw(st.integers(-(10**10), 10**10))
        for _ in range(draw(st.integers(1, 12))):
            out.append(Notice(
                ts_ms=start + draw(st.integers(0, span)), broker=broker, connection_id="c", producer_id=0,
                topic=draw(st.sampled_from(("a", "b", "persistent://t/n/c"))),
                reason=draw(st.sampled_from(REASON_ORDER)).name, pause_for_millis=draw(st.integers(0, 10**6)),
                receipt=draw(st.sampled_from(RECEIPTS)), connection_paused_ms=draw(st.integers(0, 10**6)),
                stalled_topics=draw(st.integers(0, 5)),
                connection_paused_ms_without_notices=draw(st.integers(0, 10**6)),
                stalled_topics_without_notices=draw(st.integers(0, 5))))
    return out


def _frame(rows: list[Notice]) -> pd.DataFrame:
    return pd.DataFrame([n.as_dict() for n in rows], columns=list(NOTICE_COLUMNS))


def _texts(rows: list[Notice]) -> list[str]:
    brokers = sorted({n.broker for n in rows})
    return [broker_aggregates(_frame([n for n in rows if n.broker == b])) for b in brokers]


@settings(max_examples=150, deadline=None)
@given(notices())
def test_merged_broker_sums_are_the_reference_comparison_and_timeline(rows: list[Notice]) -> None:
    comparison, timeline, bucket_ms = merge(_texts(rows))
    times = [n.ts_ms for n in rows]
    expected_bucket = bucket_ms_for(min(times, default=None), max(times, default=None))
    assert bucket_ms == expected_bucket
    assert comparison == compare(rows)
    assert timeline == timeline_rows(rows, expected_bucket)


def test_no_broker_with_notices() -> None:
    assert merge([]) == ([], [], BUCKET_CHOICES_MS[0])


def test_a_broker_observed_twice_counts_once() -> None:
    rows = [Notice(T0, "b0", "c", 0, "a", "TopicProduceQuotaExceeded", 10, "late", 5, 1, 7, 2)]
    (text,) = _texts(rows)
    assert merge([text, text]) == merge([text])
    assert merge([text])[0] == compare(rows)


def test_every_bucket_choice_is_a_multiple_of_the_smaller_ones() -> None:
    # what lets a broker's buckets fall whole into the run's
    for smaller, larger in pairwise(BUCKET_CHOICES_MS):
        assert larger % smaller == 0


def test_sums_past_int64_are_exact_and_a_comparison_sum_beyond_a_long_fails() -> None:
    big = 2**62
    rows = [Notice(T0 + i, "b0", "c", 0, topic, "BrokerProduceQuotaExceeded", 0, "in_time", big, 0, 0, 0)
            for i, topic in enumerate(("a", "b", "b"))]
    text = broker_aggregates(_frame(rows))
    paused = COMPARISON_COLUMNS.index("connection_paused_ms")
    assert sorted(r[paused] for r in json.loads(text)["comparison"]) == [big, 2 * big]
    with pytest.raises(ValueError, match="connection_paused_ms of the notices of broker 'b0', topic 'b', "
                                         "reason BrokerProduceQuotaExceeded is beyond a LONG"):
        merge([text])
    # the timeline is not a table: its sums across topics stay exact
    fine = broker_aggregates(_frame(rows[:2]))
    assert merge([fine])[1][0]["connection_paused_ms"] == 2 * big
