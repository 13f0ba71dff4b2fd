"""Topic bytes-in quotas evaluated incrementally, one broker at a time (`quotaplane stream`).

The rules are the reference engine's (`quotaplane.topics.engine.evaluate.judge_millisecond`, the same
code `evaluate` runs); this module only decides *when* a request can be judged. See docs/topics.md,
"In the streaming mode".
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, ClassVar, NamedTuple

from quotaplane.core.incremental import Advance, Column, Incremental, Table
from quotaplane.topics.config import TopicQuotaConfig
from quotaplane.topics.engine.evaluate import BrokerState, TopicRequest, judge_millisecond
from quotaplane.topics.engine.thresholds import ThresholdSchedule, TopicSet
from quotaplane.topics.records import TOPIC_REQUESTS

INPUT = TOPIC_REQUESTS.name
DECISIONS_TABLE = Table("topic_decisions", (
    Column("ts_ms", "long"), Column("broker_id", "long"), Column("topic", "string"), Column("bytes", "long"),
    Column("decision", "string"), Column("reason", "string"), Column("total_rate", "double"),
    Column("topic_rate", "double"), Column("total_threshold", "long"), Column("topic_threshold", "long"),
    Column("threshold_source", "string"),
))


class _Pending(NamedTuple):
    """An undecided request, in the order the batch breaks ties (time, then file and position)."""

    ts_ms: int
    file: int
    position: int
    broker_id: int
    topic: str
    bytes: int


@dataclass
class TopicsState:
    """One broker's state: the reference engine's `BrokerState` (the broker-wide and per-topic
    Yammer meters, the topic set and its position in the threshold schedule), the requests not
    judged yet, and the last millisecond judged (None: none yet)."""

    broker: BrokerState
    pending: list[_Pending] = field(default_factory=list)
    judged_ms: int | None = None


@lru_cache(maxsize=8)
def _schedule(config: TopicQuotaConfig) -> ThresholdSchedule:
    """The config's threshold schedule (derived from the config only: never kept in a state)."""
    return ThresholdSchedule(config)


class TopicsIncremental(Incremental[TopicQuotaConfig]):
    """Topic bytes-in quotas per broker (docs/topics.md; spec: kafka-topic-bytes-in-quota, Low level
    design 1-4).

    - Key: `broker_id`: meters, topic sets and default shares are a broker's own (docs/topics.md,
      "Choices where the spec is silent"), so brokers are independent.
    - Unit: one produce request, giving one `topic_decisions` row (the batch stage's
      `decisions(rows)`; the meters, intervals and dropped tables are not streamed).
    - Final at watermark W when its `ts_ms < W`. A request is judged after every tick at or before
      its time and with the broker's topic set at its millisecond, which every request of that
      millisecond joins ("Thresholds as of a time"); meters only change at ticks, so nothing later
      changes it. A request exactly at W is not final: another one at W may still bring a new
      topic and lower the default share. Requests of one millisecond are judged together, in
      (`ts_ms`, `_file`, `_position`) order as the batch sorts them (their decisions do not depend
      on that order: "Marks only change a rate at the next tick").
    - State (`TopicsState`): the broker's meters (three broker-wide, three per topic seen), its
      topic set and schedule position, the requests at or after W, and the last millisecond
      judged. Bounded: the meters and the topic set grow with the broker's topics, as in the batch
      engine; requests leave the state when judged. The threshold schedule is derived from the
      config on each call (the topic set carries a copy of its configured topics' entry times).
    - A row at or before the last judged millisecond (impossible when the watermark is kept) is
      returned in `late`: the meters have moved past it.
    """

    name: ClassVar[str] = "topics"
    time_fields: ClassVar[Mapping[str, str]] = {INPUT: "ts_ms"}
    key: ClassVar[tuple[str, ...]] = ("broker_id",)
    outcomes: ClassVar[Mapping[str, str]] = {"topic_decisions": "decision"}
    tables: ClassVar[tuple[Table, ...]] = (DECISIONS_TABLE,)

    def new_state(self, config: TopicQuotaConfig) -> TopicsState:
        return TopicsState(BrokerState(TopicSet(_schedule(config))))

    def advance(self, config: TopicQuotaConfig, state: TopicsState,
                rows: Mapping[str, Sequence[dict[str, Any]]], watermark_ms: int | None) -> Advance:
        late: list[dict[str, Any]] = []
        for row in rows.get(INPUT, ()):
            ts = int(row["ts_ms"])
            if state.judged_ms is not None and ts <= state.judged_ms:
                reason = f"broker {row['broker_id']} already judged its requests at {state.judged_ms} ms"
                late.append({"input": INPUT, "reason": reason, "row": row})
                continue
            state.pending.append(_Pending(ts, int(row["_file"]), int(row["_position"]), int(row["broker_id"]),
                                          str(row["topic"]), int(row["bytes"])))
        state.pending.sort()
        cut = (len(state.pending) if watermark_ms is None
               else bisect_left(state.pending, watermark_ms, key=lambda p: p.ts_ms))
        final, state.pending = state.pending[:cut], state.pending[cut:]
        schedule = _schedule(config)
        decided: list[dict[str, Any]] = []
        start = 0
        while start < len(final):
            end = start
            while end < len(final) and final[end].ts_ms == final[start].ts_ms:
                end += 1
            requests = [TopicRequest(p.ts_ms, p.broker_id, p.topic, p.bytes) for p in final[start:end]]
            decided += [d.as_dict() for d in judge_millisecond(config, schedule, state.broker, requests)]
            state.judged_ms = final[start].ts_ms
            start = end
        return Advance({DECISIONS_TABLE.name: decided}, late)

