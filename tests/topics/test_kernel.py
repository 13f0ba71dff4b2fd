"""The numpy kernel (tick windows) agrees bit for bit with the reference engine (one request at a time)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings

from quotaplane.topics.config import parse_topics_config
from quotaplane.topics.engine.evaluate import TopicRequest, evaluate
from quotaplane.topics.engine.kernel import evaluate_broker
from tests.topics.compare import kernel_agrees
from tests.topics.strategies import fleets


@settings(max_examples=6 * settings().max_examples, deadline=None)  # 150 by default
@given(fleets(brokers=4))
def test_kernel_matches_the_reference(generated) -> None:
    config, requests = generated
    kernel_agrees(config, requests, evaluate(config, requests))


def test_kernel_on_a_hand_made_case() -> None:
    config = parse_topics_config({"total.bytes.in.per.sec.threshold": "0", "message.max.bytes": "100"})
    requests = [TopicRequest(0, 1, "a", 50), TopicRequest(3000, 1, "b", 50), TopicRequest(5000, 1, "a", 101),
                TopicRequest(5000, 1, "a", 10), TopicRequest(8000, 1, "b", 10),
                TopicRequest(9_000_000, 1, "b", 1)]
    evaluation = evaluate(config, requests)
    assert [d.decision for d in evaluation.decisions] == ["accepted", "accepted", "error", "throttled",
                                                          "throttled", "throttled"]
    kernel_agrees(config, requests, evaluation)


def test_kernel_reads_meters_at_as_of_after_the_last_request() -> None:
    result = evaluate_broker(np.array([0, 1000]), np.array([0, 1]), np.array([5000, 5000]), np.array([0, 0]),
                             2, 0, 10_000, 5999)
    assert result.broker_one_minute_rate.tolist() == [2000.0, 0.0, 0.0]
    assert result.topic_one_minute_rate[0].tolist() == [1000.0, 0.0]  # b ticks first at 6000
    assert result.topic_created_ms.tolist() == [0, 1000]
