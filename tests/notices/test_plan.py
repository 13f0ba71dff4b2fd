"""The notices stage's plan: one shuffle (by broker) and one pass of Python groups, and the input's
counts taken after that shuffle by the same action.

`evaluate_brokers` shuffles the checked traffic once; the groups' sort by broker is the one sort
`applyInPandas` needs. The counts of the input (read, used) are observed after the shuffle, where
Spark takes a task's observed values once even when the task runs again, so the stage needs no scan
of its own to count them. A change that adds a pass over the traffic, or counts before the shuffle,
fails here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from quotaplane.core.spark.readers import CountedInUse, read_telemetry
from quotaplane.notices.config import parse_notice_config
from quotaplane.notices.records import PRODUCER_TRAFFIC
from quotaplane.notices.spark.evaluate import evaluate_brokers, observe_aggregates
from tests.support.plans import (
    PYTHON_GROUPS,
    SHUFFLE,
    SORT,
    SORT_AGGREGATE,
    WINDOW,
    describe,
    operators,
    plan_text,
)

pytestmark = pytest.mark.spark

ROWS = [
    '{"ts_ms": 0, "connection_id": "c1", "producer_id": 1, "topic": "a", "bytes": 600, "broker": "b0"}',
    '{"ts_ms": 5, "connection_id": "c1", "producer_id": 1, "topic": "a", "bytes": 600, "broker": "b1"}',
    '{"ts_ms": 7, "connection_id": "c1", "producer_id": 1, "topic": "a", "bytes": 600, "broker": "b1"}',
    '{"ts_ms": 9, "connection_id": "", "producer_id": 1, "topic": "a", "bytes": 600, "broker": "b1"}',
]


def test_one_shuffle_one_python_pass_and_the_counts_after_the_shuffle(spark, tmp_path: Path) -> None:
    path = tmp_path / "producer_traffic.jsonl"
    path.write_text("\n".join(ROWS) + "\n")
    read = read_telemetry(spark, PRODUCER_TRAFFIC, str(path))
    counted = CountedInUse(read)
    config = parse_notice_config({"topic.a.publishMaxByteRate": "1000"})
    notices, observation = observe_aggregates(read.checked.transform(evaluate_brokers(config, counted)))
    ops = operators(notices)
    assert ops[SHUFFLE] == ops[SORT] == ops[PYTHON_GROUPS] == 1, describe(notices)
    assert ops[SORT_AGGREGATE] == ops[WINDOW] == 0 and not any("Join" in op for op in ops), describe(notices)
    # the plan is printed from the root: the input's counts come before (above) the shuffle's line
    lines = plan_text(notices).splitlines()
    counts_at = next(i for i, line in enumerate(lines)
                     if "CollectMetrics" in line and "producer_traffic" in line)
    shuffle_at = next(i for i, line in enumerate(lines) if "Exchange" in line)
    assert counts_at < shuffle_at, describe(notices)
    notices.write.format("noop").mode("overwrite").save()
    counts = counted.counts(None)
    assert (counts.read, counts.used, counts.quarantined) == (4, 3, 1)
    assert len(observation.get["brokers"]) == 1  # b1's second request breaches the topic's rate
