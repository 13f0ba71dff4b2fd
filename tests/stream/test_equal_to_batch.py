"""`quotaplane stream` over telemetry arriving in windows gives, once idle, exactly the decision rows
`quotaplane run` gives on the same files: a test per policy, through the one differential harness."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from quotaplane.registry import POLICIES
from quotaplane.stream.plan import streamed_policies
from quotaplane.stream.run import StreamOptions, run_stream
from tests.stream.streams import STEPS, StreamCase, step_conf, stream_tables
from tests.support.differential import assert_rows_equal

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module", params=STEPS)
def streamed(request, spark, case: StreamCase) -> Path:
    out = case.root / f"stream-{request.param}"
    options = StreamOptions(case.landing, out, out / "_checkpoint", trigger_seconds=0.5,
                            until_idle_seconds=2.0, watermark_delay_ms=case.delay_ms,
                            max_files_per_trigger=1)
    conf = step_conf(request.param)
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        run_stream(options, streamed_policies(POLICIES, case.configs), display=None, spark=spark)
    finally:
        for key in conf:
            spark.conf.unset(key)
    return out


@pytest.mark.parametrize("table", ["storage_decisions", "client_request_decisions", "topic_decisions",
                                   "backlog_checks", "backlog_evictions"])
def test_the_stream_decides_like_the_batch_run(spark, batch, streamed: Path, table: str) -> None:
    expected = batch[table]
    actual = stream_tables(spark, streamed).get(table, [])
    assert expected, f"the batch run decided no {table} rows: the case tests nothing"
    assert_rows_equal(expected, actual, label=table)


def test_the_stream_ran_over_several_micro_batches(case: StreamCase, batch, streamed: Path) -> None:
    from quotaplane.stream.commits import CommitLog

    latest = CommitLog(streamed / "_checkpoint").latest()
    assert latest.flushed and latest.number >= case.windows
    reads = {k: v for k, v in latest.totals.items() if k.startswith("read:")}
    used = {k: v for k, v in latest.totals.items() if k.startswith("used:")}
    assert sum(reads.values()) == case.rows and sum(used.values()) == case.rows
    assert not any(v for k, v in latest.totals.items() if k.startswith(("late:", "quarantined:")))
    # the outcome counts (metrics) cover every decision
    for table, column in (("topic_decisions", "decision"), ("client_request_decisions", "throttled"),
                          ("backlog_checks", "exceeded")):
        counted = {k.rsplit(":", 1)[1]: v for k, v in latest.totals.items()
                   if k.startswith(f"outcome:{table}:{column}:")}
        expected = Counter("null" if r[column] is None else str(r[column]).lower() for r in batch[table])
        assert counted == dict(expected), table


def test_every_policy_with_decision_rows_streams() -> None:
    assert {p.name for p in POLICIES if p.incremental is not None} == {
        "storage", "clients", "topics", "backlog"}

