"""Generated topic bytes-in configs and produce requests, aimed at the rules' boundaries.

Rates land near the thresholds (a few kB per request, about one request per second per broker),
times sit on a 250 ms grid so requests fall exactly on tick times, many share a millisecond, and
sizes straddle `message.max.bytes`. Every broker is an independent scenario.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from quotaplane.topics.config import TopicQuotaConfig, parse_topics_config, threshold_key
from quotaplane.topics.engine.evaluate import TopicRequest
from quotaplane.topics.records import TOPIC_REQUESTS

TOPICS = ("a", "b", "c", "d", "e", "f", "g")
T0 = 1_700_000_000_000


@st.composite
def configs(draw: Any) -> TopicQuotaConfig:
    """A valid config: plain thresholds summing to at most the total, and timed changes (some of
    which are rejected, some remove a threshold, several may share a millisecond)."""
    total = draw(st.sampled_from((0, 500, 1000, 2000, 3000, 6000)))
    props = {"total.bytes.in.per.sec.threshold": str(total),
             "message.max.bytes": str(draw(st.sampled_from((0, 5000, 5000, 9000, 9000, 20000, 1048588))))}
    explicit = 0
    for topic in draw(st.lists(st.sampled_from(TOPICS[:4]), unique=True, max_size=3)):
        value = draw(st.integers(0, 3000))
        if explicit + value <= total:
            props[threshold_key(topic)] = str(value)
            explicit += value
    for _ in range(draw(st.integers(0, 4))):
        ts = T0 + draw(st.sampled_from((0, 2500, 5000, 20_000, 30_000, 45_000, 70_000)))
        value = draw(st.one_of(st.none(), st.integers(0, 3000)))
        props[threshold_key(draw(st.sampled_from(TOPICS[:5])), ts)] = "" if value is None else str(value)
    props["quotaplane.topics.interval.ms"] = str(draw(st.sampled_from((1000, 7000, 60_000))))
    return parse_topics_config(props)


@st.composite
def broker_requests(draw: Any, broker_id: int) -> list[TopicRequest]:
    start = T0 + draw(st.sampled_from((0, 1, 1250, 4999, 5000, 12_345)))
    n = draw(st.integers(1, 30))
    gaps = st.sampled_from((0, 0, 250, 500, 500, 1000, 1000, 2000, 5000, 7500))
    steps = draw(st.lists(gaps, min_size=n, max_size=n))
    sizes = st.one_of(st.integers(0, 6000), st.integers(0, 6000),
                      st.sampled_from((0, 4999, 5000, 5001, 8999, 9000, 9001, 25_000)))
    out, ts = [], start
    for step in steps:
        ts += step
        out.append(TopicRequest(ts, broker_id, draw(st.sampled_from(TOPICS)), draw(sizes)))
    return out


@st.composite
def fleets(draw: Any, brokers: int) -> tuple[TopicQuotaConfig, list[TopicRequest]]:
    """A config and the requests of `brokers` independent brokers, shuffled (input order is not
    time order); sometimes a late request far in the future of one broker (long idle decay)."""
    config = draw(configs())
    requests = [r for b in range(brokers) for r in draw(broker_requests(b))]
    if draw(st.booleans()):
        late = draw(st.sampled_from((60_000, 3_600_000, 100_000_000)))
        requests.append(TopicRequest(T0 + late, 0, draw(st.sampled_from(TOPICS)), 100))
    return config, draw(st.permutations(requests))


# the partitions of the brokers' groups, as many as the test session's shuffles have
PARTITIONS = 2


def request_frame(spark: Any, requests: Sequence[TopicRequest]) -> Any:
    """The requests as a Spark DataFrame of the `topic_requests` schema."""
    from quotaplane.core.spark.schemas import spark_schema

    return spark.createDataFrame([(r.ts_ms, r.broker_id, r.topic, r.bytes) for r in requests],
                                 spark_schema(TOPIC_REQUESTS))
