"""The reference engine: every produce request judged one at a time, in event time.

spec: kafka-topic-bytes-in-quota. Per broker: a broker-wide bytes-in meter created at the broker's
first request, and per topic a bytes-in meter created at the topic's first request on that broker;
each ticks at its creation time + 5 s * k (see `meter`). Requests are taken in time order; for each
millisecond, the topics first seen then join the broker's topic set, then each request is judged
after every tick at or before its time: error when above `message.max.bytes`, throttled when both
one-minute rates are strictly above their thresholds, accepted otherwise (see `decision`).
Accepted bytes are marked in the bytes-in meters, throttled and error bytes in the throttled and
error meters (topic and broker-wide) and never in bytes in. Marks only change a rate at the next
tick, so requests of one broker at the same millisecond are judged alike whatever their order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from quotaplane.topics.config import TopicQuotaConfig
from quotaplane.topics.engine.decision import METER_OF, METERS, judge
from quotaplane.topics.engine.meter import Meter
from quotaplane.topics.engine.thresholds import Threshold, ThresholdSchedule, TopicSet


@dataclass(frozen=True)
class TopicRequest:
    """One produce request (see `quotaplane.topics.records.TOPIC_REQUESTS`)."""

    ts_ms: int
    broker_id: int
    topic: str
    bytes: int


@dataclass(frozen=True)
class Decision:
    """What the broker did with one request, and what it saw when it judged it."""

    ts_ms: int
    broker_id: int
    topic: str
    bytes: int
    decision: str
    reason: str | None
    total_rate: float
    topic_rate: float
    total_threshold: int
    topic_threshold: int
    threshold_source: str

    def as_dict(self) -> dict[str, object]:
        """The fields by name (all plain values: no copy as `dataclasses.asdict` makes)."""
        return dict(vars(self))


@dataclass(frozen=True)
class MeterSnapshot:
    """The meters of one topic on one broker (`topic` None: broker-wide) as of `as_of_ms`.

    Counts are bytes marked over the whole evaluation; rates are one-minute rates in bytes/s.
    `threshold` is the topic's threshold at `as_of_ms` (the total threshold for broker-wide meters).
    """

    broker_id: int
    topic: str | None
    created_ms: int
    bytes_in_count: int
    bytes_in_rate: float
    throttled_bytes_in_count: int
    throttled_bytes_in_rate: float
    error_bytes_in_count: int
    error_bytes_in_rate: float
    threshold: int
    threshold_source: str

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class Evaluation:
    """Decisions in input order, final meters (brokers, then topics, sorted), and their time."""

    decisions: list[Decision]
    meters: list[MeterSnapshot]
    as_of_ms: int | None


@dataclass
class _MeterSet:
    created_ms: int
    meters: dict[str, Meter] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.meters = {name: Meter(self.created_ms) for name in METERS}

    def advance(self, ts_ms: int) -> None:
        for meter in self.meters.values():
            meter.advance(ts_ms)


@dataclass
class BrokerState:
    """Everything the evaluation keeps for one broker between two milliseconds: the broker-wide
    meters (None before its first request), the topic set (with its position in the schedule's
    configured topics) and the meters of every topic seen on the broker. Plain objects: it pickles.
    Brokers are independent, so a broker's requests can be judged by `judge_millisecond` one
    millisecond at a time, resumed at any point (the streaming mode does, `topics.incremental`)."""

    topic_set: TopicSet
    meters: _MeterSet | None = None
    topics: dict[str, _MeterSet] = field(default_factory=dict)


def judge_millisecond(config: TopicQuotaConfig, schedule: ThresholdSchedule, broker: BrokerState,
                      requests: Sequence[TopicRequest]) -> list[Decision]:
    """Judge every request of one broker at one millisecond (all of them at once: a topic first
    seen then joins the topic set before any of them is judged), after every earlier millisecond of
    the broker; the decisions in the order given."""
    if not requests:
        return []
    ts = requests[0].ts_ms
    if broker.meters is None:
        broker.meters = _MeterSet(ts)
    for r in requests:
        if r.ts_ms != ts:
            raise ValueError(f"requests at {ts} and {r.ts_ms} ms judged as one millisecond")
        if r.topic not in broker.topics:
            broker.topics[r.topic] = _MeterSet(ts)
        broker.topic_set.see(r.topic)
    broker.topic_set.advance(ts)
    return [_judge(config, schedule, broker, r) for r in requests]


def evaluate(config: TopicQuotaConfig, requests: Sequence[TopicRequest],
             as_of_ms: int | None = None) -> Evaluation:
    """Judge every request; the final meters are read at `as_of_ms` (default: the last request)."""
    schedule = ThresholdSchedule(config)
    order = sorted(range(len(requests)), key=lambda i: requests[i].ts_ms)
    out: list[Decision | None] = [None] * len(requests)
    brokers: dict[int, BrokerState] = {}
    start = 0
    while start < len(order):
        ts = requests[order[start]].ts_ms
        end = start
        while end < len(order) and requests[order[end]].ts_ms == ts:
            end += 1
        by_broker: dict[int, list[int]] = {}
        for i in order[start:end]:
            by_broker.setdefault(requests[i].broker_id, []).append(i)
        for broker_id, batch in by_broker.items():
            broker = brokers.get(broker_id)
            if broker is None:
                broker = brokers[broker_id] = BrokerState(TopicSet(schedule))
            judged = judge_millisecond(config, schedule, broker, [requests[i] for i in batch])
            for i, decision in zip(batch, judged, strict=True):
                out[i] = decision
        start = end
    if requests:
        last = requests[order[-1]].ts_ms
        if as_of_ms is not None and as_of_ms < last:
            raise ValueError(f"as_of_ms={as_of_ms} is before the last request ({last})")
        as_of_ms = last if as_of_ms is None else as_of_ms
    meters = _snapshots(config, schedule, brokers, as_of_ms) if as_of_ms is not None else []
    return Evaluation([d for d in out if d is not None], meters, as_of_ms)


def _judge(config: TopicQuotaConfig, schedule: ThresholdSchedule, broker: BrokerState,
           r: TopicRequest) -> Decision:
    topic = broker.topics[r.topic]
    assert broker.meters is not None
    broker.meters.advance(r.ts_ms)
    topic.advance(r.ts_ms)
    total_rate = broker.meters.meters["bytes_in"].one_minute_rate()
    topic_rate = topic.meters["bytes_in"].one_minute_rate()
    threshold = schedule.threshold(r.topic, r.ts_ms, len(broker.topic_set))
    decision, reason = judge(r.bytes, config.message_max_bytes, total_rate, config.total_threshold,
                             topic_rate, threshold.value)
    meter = METER_OF[decision]
    broker.meters.meters[meter].mark(r.bytes)
    topic.meters[meter].mark(r.bytes)
    return Decision(r.ts_ms, r.broker_id, r.topic, r.bytes, decision, reason, total_rate, topic_rate,
                    config.total_threshold, threshold.value, threshold.source)


def _snapshots(config: TopicQuotaConfig, schedule: ThresholdSchedule, brokers: dict[int, BrokerState],
               as_of_ms: int) -> list[MeterSnapshot]:
    out: list[MeterSnapshot] = []
    for broker_id in sorted(brokers):
        broker = brokers[broker_id]
        broker.topic_set.advance(as_of_ms)
        assert broker.meters is not None
        out.append(_snapshot(broker_id, None, broker.meters, as_of_ms,
                             Threshold(config.total_threshold, "total")))
        for name in sorted(broker.topics):
            threshold = schedule.threshold(name, as_of_ms, len(broker.topic_set))
            out.append(_snapshot(broker_id, name, broker.topics[name], as_of_ms, threshold))
    return out


def _snapshot(broker_id: int, topic: str | None, meters: _MeterSet, as_of_ms: int,
              threshold: Threshold) -> MeterSnapshot:
    meters.advance(as_of_ms)
    m = meters.meters
    return MeterSnapshot(
        broker_id, topic, meters.created_ms,
        m["bytes_in"].count, m["bytes_in"].one_minute_rate(),
        m["throttled_bytes_in"].count, m["throttled_bytes_in"].one_minute_rate(),
        m["error_bytes_in"].count, m["error_bytes_in"].one_minute_rate(),
        threshold.value, threshold.source,
    )


def requests_from_dicts(rows: Iterable[Mapping[str, Any]]) -> list[TopicRequest]:
    """Typed requests from already-checked dicts (`TOPIC_REQUESTS.coerce_record` output)."""
    return [TopicRequest(int(r["ts_ms"]), int(r["broker_id"]), str(r["topic"]), int(r["bytes"]))
            for r in rows]
