"""The numpy kernel (tick windows) and thresholds agree bit for bit with the reference engine (one request
at a time)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import pairwise

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings

from quotaplane.topics.config import TopicQuotaConfig, parse_topics_config
from quotaplane.topics.engine import kernel
from quotaplane.topics.engine.broker_thresholds import broker_thresholds
from quotaplane.topics.engine.decision import DECISIONS, DEFAULT_SHARE, EXPLICIT
from quotaplane.topics.engine.evaluate import Evaluation, TopicRequest, evaluate
from quotaplane.topics.engine.kernel import evaluate_broker
from quotaplane.topics.engine.thresholds import ThresholdSchedule
from tests.topics.strategies import T0, TOPICS, fleets


@settings(parent=settings.get_profile("kernel"))
@given(fleets(brokers=4))
def test_kernel_matches_the_reference(generated) -> None:
    config, requests = generated
    evaluation = evaluate(config, requests)
    kernel_agrees(config, requests, evaluation)
    kernel_agrees(config, requests, evaluation, reverse_codes=True)


def test_kernel_on_a_hand_made_case() -> None:
    config = parse_topics_config({"total.bytes.in.per.sec.threshold": "0", "message.max.bytes": "100"})
    requests = [TopicRequest(0, 1, "a", 50), TopicRequest(3000, 1, "b", 50), TopicRequest(5000, 1, "a", 101),
                TopicRequest(5000, 1, "a", 10), TopicRequest(8000, 1, "b", 10),
                TopicRequest(9_000_000, 1, "b", 1)]
    evaluation = evaluate(config, requests)
    assert [d.decision for d in evaluation.decisions] == ["accepted", "accepted", "error", "throttled",
                                                          "throttled", "throttled"]
    kernel_agrees(config, requests, evaluation)
    kernel_agrees(config, requests, evaluation, reverse_codes=True)


def test_kernel_reads_meters_at_as_of_after_the_last_request() -> None:
    result = evaluate_broker(np.array([0, 1000]), np.array([0, 1]), np.array([5000, 5000]), np.array([0, 0]),
                             2, 0, 10_000, 5999)
    assert result.broker_one_minute_rate.tolist() == [2000.0, 0.0, 0.0]
    assert result.topic_one_minute_rate[0].tolist() == [1000.0, 0.0]  # b ticks first at 6000
    assert result.topic_created_ms.tolist() == [0, 1000]


@pytest.mark.parametrize("quiet_cells", [kernel.QUIET_CELLS, 1])
def test_kernel_over_long_busy_runs(quiet_cells: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hundreds of busy windows in a row: the broker goes over the total and back, topics are
    created among them, some requests are too large, and the runs of quiet windows are cut at their
    length limit (every 8 windows with `quiet_cells` 1). The kernel agrees with the reference."""
    monkeypatch.setattr(kernel, "QUIET_CELLS", quiet_cells)
    rng = np.random.default_rng(16)
    config = parse_topics_config({"total.bytes.in.per.sec.threshold": "3000", "message.max.bytes": "5000"})
    requests, ts = [], T0
    for i in range(1200):
        ts += int(rng.choice([0, 250, 500, 1000]))
        loud = (i // 200) % 2  # about 7 kB/s for 200 requests, then about 1 kB/s
        size = int(rng.integers(0, 6000 if loud else 1000))
        topic = str(rng.choice(TOPICS[:1 + i // 200]))  # a new topic every 200 requests
        requests.append(TopicRequest(ts, 1, topic, size))
    evaluation = evaluate(config, requests)
    decided = Counter(d.decision for d in evaluation.decisions)
    assert decided["throttled"] > 50 and decided["error"] > 50
    over = [d.total_rate > config.total_threshold for d in evaluation.decisions]
    assert sum(a != b for a, b in pairwise(over)) >= 4  # over and back, twice
    kernel_agrees(config, requests, evaluation)


def kernel_agrees(config: TopicQuotaConfig, requests: Sequence[TopicRequest], evaluation: Evaluation,
                  reverse_codes: bool = False) -> None:
    """Run the numpy thresholds and kernel per broker (the kernel with the reference's thresholds);
    assert bit-identical results. Topic codes are numbered by first appearance, as the stage numbers
    them, or in the reverse of that order."""
    assert evaluation.as_of_ms is not None
    meters = {(m.broker_id, m.topic): m for m in evaluation.meters}
    for broker_id in sorted({r.broker_id for r in requests}):
        idx = sorted((i for i, r in enumerate(requests) if r.broker_id == broker_id),
                     key=lambda i: requests[i].ts_ms)
        codes, names = pd.factorize(np.array([requests[i].topic for i in idx], dtype=object))
        if reverse_codes:  # codes not numbered by first appearance: the kernel finds creation by code
            codes, names = len(names) - 1 - codes, names[::-1]
        result = evaluate_broker(
            np.array([requests[i].ts_ms for i in idx], dtype=np.int64), codes.astype(np.int64),
            np.array([requests[i].bytes for i in idx], dtype=np.int64),
            np.array([evaluation.decisions[i].topic_threshold for i in idx], dtype=np.int64),
            len(names), config.total_threshold, config.message_max_bytes, evaluation.as_of_ms)
        thresholds = broker_thresholds(ThresholdSchedule(config),
                                       np.array([requests[i].ts_ms for i in idx], dtype=np.int64),
                                       codes.astype(np.int64), names, evaluation.as_of_ms)
        for j, i in enumerate(idx):
            d = evaluation.decisions[i]
            assert (int(thresholds.value[j]), EXPLICIT if thresholds.explicit[j] else DEFAULT_SHARE) == (
                d.topic_threshold, d.threshold_source), (i, d)
        for j, i in enumerate(idx):
            d = evaluation.decisions[i]
            got = (DECISIONS[result.decision[j]], float(result.total_rate[j]), float(result.topic_rate[j]))
            assert got == (d.decision, d.total_rate, d.topic_rate), (i, d)
        b = meters[(broker_id, None)]
        assert result.broker_count.tolist() == [b.bytes_in_count, b.throttled_bytes_in_count,
                                                b.error_bytes_in_count]
        assert result.broker_one_minute_rate.tolist() == [b.bytes_in_rate, b.throttled_bytes_in_rate,
                                                          b.error_bytes_in_rate]
        for j, name in enumerate(names):
            m = meters[(broker_id, name)]
            source = EXPLICIT if thresholds.final_explicit[j] else DEFAULT_SHARE
            assert (int(thresholds.final_value[j]), source) == (m.threshold, m.threshold_source)
            assert int(result.topic_created_ms[j]) == m.created_ms
            assert result.topic_count[:, j].tolist() == [m.bytes_in_count, m.throttled_bytes_in_count,
                                                         m.error_bytes_in_count]
            assert result.topic_one_minute_rate[:, j].tolist() == [m.bytes_in_rate, m.throttled_bytes_in_rate,
                                                                   m.error_bytes_in_rate]
