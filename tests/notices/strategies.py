"""Generated notice configs and producer traffic, aimed at the rules' boundaries (docs/notices.md).

Rates are small (a few kB or messages per second) so that buckets empty; they cover the three ways
the kernel makes tokens: a multiple of 1000/s (no carry), a divisor of 10^9 (a whole-ns carry) and
the rest (a carry loop; 1 MiB/s and 10^9 + 1/s make the forced update of a throttling duration mint
a token). A few connections, producers and topics (named in every form Pulsar reads, partitions
included), times in a few seconds on a coarse grid so events share milliseconds, latencies around
the receipt wait, pending limits of 1 to 3 requests and per-thread buffers of a few bytes to kB.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from hypothesis import strategies as st

from quotaplane.notices.config import NoticeConfig, parse_notice_config
from quotaplane.notices.records import PRODUCER_TRAFFIC

T0 = 1_700_000_000_000
# the same topics written differently, a partition, a topic of another namespace
TOPICS = ("a", "public/default/a", "persistent://public/default/a", "b", "b-partition-0", "b-partition-1",
          "c", "t1/ns1/d", "non-persistent://t1/ns1/e")
CONNECTIONS = ("c1", "c2", "c3", "c4")
RATES = (0, 1, 3, 7, 10, 100, 1000, 2000, 3000, 1500, 4096, 1048576, 1_000_000_001)
_DTYPES = {"long": "Int64", "time_ms": "Int64", "bool": "boolean", "string": object}


@st.composite
def configs(draw: Any) -> NoticeConfig:
    """A valid `notices.properties`: topic, namespace, resource-group and broker rates (often none),
    small connection-level limits, the receipt wait and the pause rule."""
    rate = st.sampled_from(RATES)
    props: dict[str, str] = {}
    for key in draw(st.lists(st.sampled_from(("topic.a", "topic.public/default/b", "topic.c",
                                              "namespace.public/default", "namespace.t1/ns1")),
                             unique=True, max_size=3)):
        for suffix in draw(st.lists(st.sampled_from(("publishMaxByteRate", "publishMaxMessageRate")),
                                    unique=True, min_size=1)):
            props[f"{key}.{suffix}"] = str(draw(rate))
    if draw(st.booleans()):
        props["resourcegroup.g.topics"] = ",".join(draw(st.lists(st.sampled_from(("a", "b", "t1/ns1/d")),
                                                                 unique=True, min_size=1)))
        props["resourcegroup.g.publishRateInBytes"] = str(draw(rate))
        props["resourcegroup.g.publishRateInMsgs"] = str(draw(rate))
    if draw(st.booleans()):
        props["brokerPublisherThrottlingMaxByteRate"] = str(draw(st.sampled_from((0, 2000, 5000, 1048576))))
        props["brokerPublisherThrottlingMaxMessageRate"] = str(draw(st.sampled_from((0, 7, 20))))
    props["maxPendingPublishRequestsPerConnection"] = str(draw(st.sampled_from((0, 1, 2, 3, 1000))))
    if draw(st.booleans()):
        props["maxMessagePublishBufferSizeInMB"] = "1"
        # 2^20 // threads bytes per thread: 1 MiB, a few kB, 1 byte, 0 (no limit)
        props["numIOThreads"] = str(draw(st.sampled_from((1, 2, 3, 300, 1048576, 2097152))))
    props["throttleProducerReceiptWaitTimeMillis"] = str(draw(st.sampled_from((0, 50, 100))))
    props["quotaplane.notices.pauseRule"] = draw(st.sampled_from(("token-bucket", "token-bucket",
                                                                  "rest-of-second")))
    return parse_notice_config(props)


@st.composite
def broker_traffic(draw: Any, broker: str | None) -> list[dict[str, Any]]:
    """One broker's events: a few seconds of traffic, optional fields sometimes absent."""
    start = T0 + draw(st.sampled_from((0, 1, 999, 1000)))
    n = draw(st.integers(1, 30))
    steps = draw(st.lists(st.sampled_from((0, 0, 1, 5, 16, 17, 100, 250, 1000)), min_size=n, max_size=n))
    out: list[dict[str, Any]] = []
    ts = start
    for step in steps:
        ts += step
        event: dict[str, Any] = {
            "ts_ms": ts, "connection_id": draw(st.sampled_from(CONNECTIONS)),
            "producer_id": draw(st.integers(0, 2)), "topic": draw(st.sampled_from(TOPICS)),
            "bytes": draw(st.sampled_from((0, 1, 10, 100, 500, 1000, 1001, 2000, 5000))),
        }
        optional = {
            "messages": st.sampled_from((None, 1, 2, 5)),
            "supports_throttle": st.sampled_from((None, False, True, True)),
            "receipt_latency_ms": st.sampled_from((None, 0, 49, 50, 51, 100, 101)),
            "publish_latency_ms": st.sampled_from((None, 0, 1, 10, 100, 1000)),
        }
        for name, values in optional.items():
            if draw(st.booleans()):
                event[name] = draw(values)
        if broker is not None:
            event["broker"] = broker
        out.append(event)
    return out


@st.composite
def traffic(draw: Any, brokers: int = 1) -> tuple[NoticeConfig, list[dict[str, Any]]]:
    """A config and the events of `brokers` independent brokers (the first may have no `broker`
    field: the default `""`), shuffled: input order is not event order."""
    config = draw(configs())
    names = [None if b == 0 and draw(st.booleans()) else f"broker-{b}" for b in range(brokers)]
    events = [e for name in names for e in draw(broker_traffic(name))]
    return config, draw(st.permutations(events))


def traffic_frame(events: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Events as a pandas frame of `producer_traffic` columns (nullable types; absent is null)."""
    return pd.DataFrame({f.name: pd.Series([e.get(f.name) for e in events], dtype=_DTYPES[f.type])
                         for f in PRODUCER_TRAFFIC.fields})
