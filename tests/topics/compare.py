"""Running both engines on the same requests and putting their outputs in one comparable form."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from quotaplane.topics.config import TopicQuotaConfig
from quotaplane.topics.engine.decision import DECISIONS
from quotaplane.topics.engine.evaluate import Evaluation, TopicRequest
from quotaplane.topics.engine.kernel import evaluate_broker
from quotaplane.topics.records import TOPIC_REQUESTS

DECISION_KEYS = ("ts_ms", "broker_id", "topic", "bytes", "decision", "reason", "total_rate", "topic_rate",
                 "total_threshold", "topic_threshold", "threshold_source")


def request_frame(spark: Any, requests: Sequence[TopicRequest]) -> Any:
    return spark.createDataFrame([(r.ts_ms, r.broker_id, r.topic, r.bytes) for r in requests],
                                 TOPIC_REQUESTS.spark_schema())


def decision_rows(evaluation: Evaluation) -> list[tuple[Any, ...]]:
    return sorted_rows([tuple(d.as_dict()[k] for k in DECISION_KEYS) for d in evaluation.decisions])


def meter_rows(evaluation: Evaluation) -> list[tuple[Any, ...]]:
    return sorted_rows([tuple(m.as_dict().values()) for m in evaluation.meters])


def sorted_rows(rows: Iterable[Any]) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in rows), key=lambda t: tuple((v is None, v) for v in t))


def kernel_agrees(config: TopicQuotaConfig, requests: Sequence[TopicRequest], evaluation: Evaluation) -> None:
    """Run the numpy kernel per broker with the reference's thresholds; assert bit-identical results."""
    assert evaluation.as_of_ms is not None
    meters = {(m.broker_id, m.topic): m for m in evaluation.meters}
    for broker_id in sorted({r.broker_id for r in requests}):
        idx = sorted((i for i, r in enumerate(requests) if r.broker_id == broker_id),
                     key=lambda i: requests[i].ts_ms)
        codes, names = pd.factorize(np.array([requests[i].topic for i in idx], dtype=object))
        result = evaluate_broker(
            np.array([requests[i].ts_ms for i in idx], dtype=np.int64), codes.astype(np.int64),
            np.array([requests[i].bytes for i in idx], dtype=np.int64),
            np.array([evaluation.decisions[i].topic_threshold for i in idx], dtype=np.int64),
            len(names), config.total_threshold, config.message_max_bytes, evaluation.as_of_ms)
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
            assert int(result.topic_created_ms[j]) == m.created_ms
            assert result.topic_count[:, j].tolist() == [m.bytes_in_count, m.throttled_bytes_in_count,
                                                         m.error_bytes_in_count]
            assert result.topic_one_minute_rate[:, j].tolist() == [m.bytes_in_rate, m.throttled_bytes_in_rate,
                                                                   m.error_bytes_in_rate]
