"""The reference engine: producer traffic -> throttle notices, receipts and connection pauses.

spec: pip-385-producer-throttle-protocol (High Level Design; Broker Changes); the rules, with their
Pulsar sources, are in docs/notices.md (Token bucket, Connection-level limits, Notices, receipts and
pauses). One event at a time per broker, in the documented order; the offered traffic is replayed
as recorded and the pauses are measured against it.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from quotaplane.notices.config import NoticeConfig, PublishRate
from quotaplane.notices.engine.bucket import TokenBucket
from quotaplane.notices.protocol import Reason
from quotaplane.notices.records import normalise_topic

NS_PER_MS = 1_000_000
IN_TIME, LATE, UNSUPPORTED = "in_time", "late", "unsupported"
RECEIPTS = (IN_TIME, LATE, UNSUPPORTED)
# The order limiters are checked in for one event (docs/notices.md, Notices, receipts and pauses).
REASON_ORDER = (Reason.TopicProduceQuotaExceeded, Reason.ResourceGroupProduceQuotaExceeded,
                Reason.BrokerProduceQuotaExceeded, Reason.ConnectionPendingMessagesBreach,
                Reason.MessageBufferSizeBreach)
EVENT_ORDER = ("ts_ms", "connection_id", "producer_id", "topic", "bytes", "messages", "supports_throttle",
               "receipt_latency_ms", "publish_latency_ms")


@dataclass(frozen=True)
class Notice:
    """One notice (docs/notices.md, Outputs): what the broker sends, and what the pause costs with
    PIP-385 and without it (today's behaviour)."""

    ts_ms: int
    broker: str
    connection_id: str
    producer_id: int
    topic: str
    reason: str
    pause_for_millis: int
    receipt: str
    connection_paused_ms: int
    stalled_topics: int
    connection_paused_ms_without_notices: int
    stalled_topics_without_notices: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


NOTICE_COLUMNS = tuple(Notice.__dataclass_fields__)
COMPARISON_COLUMNS = ("broker", "topic", "reason", "notices", IN_TIME, LATE, UNSUPPORTED,
                      "pause_for_millis_total", "connection_paused_ms",
                      "connection_paused_ms_without_notices", "stalled_topics",
                      "stalled_topics_without_notices")


def with_defaults(event: Mapping[str, Any]) -> dict[str, Any]:
    """An event with the optional fields' defaults and the topic's full name."""
    out = dict(event)
    out["topic"] = normalise_topic(event["topic"])
    out["messages"] = 1 if event.get("messages") is None else event["messages"]
    out["supports_throttle"] = bool(event.get("supports_throttle"))
    out["receipt_latency_ms"] = event.get("receipt_latency_ms")
    out["publish_latency_ms"] = event.get("publish_latency_ms") or 0
    out["broker"] = event.get("broker") or ""
    return out


def event_key(event: Mapping[str, Any]) -> tuple[Any, ...]:
    """The evaluation order: the `EVENT_ORDER` fields, nulls first."""
    return tuple((0, 0) if event[f] is None else (1, event[f]) for f in EVENT_ORDER)


def evaluate(config: NoticeConfig, events: Iterable[Mapping[str, Any]]) -> list[Notice]:
    """Every notice of the traffic, broker by broker (sorted by name), each in event order."""
    by_broker: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in events:
        e = with_defaults(event)
        by_broker[e["broker"]].append(e)
    notices: list[Notice] = []
    for broker in sorted(by_broker):
        notices += BrokerEvaluation(config, broker).run(sorted(by_broker[broker], key=event_key))
    return notices


class _Limiter:
    """A publish-rate limiter: a message bucket and a byte bucket (either may be unlimited)."""

    def __init__(self, rate: PublishRate, t_ns: int) -> None:
        self.buckets = [(TokenBucket(r, t_ns), unit) for r, unit in
                        ((rate.messages_per_s, "messages"), (rate.bytes_per_s, "bytes")) if r > 0]

    def consume(self, t_ns: int, messages: int, size: int) -> bool:
        """Take the event's tokens from both buckets; True when either is empty (breached)."""
        breached = False
        for bucket, unit in self.buckets:
            breached |= bucket.consume(t_ns, messages if unit == "messages" else size) <= 0
        return breached

    def pause_ms(self, t_ns: int) -> int:
        """`calculateThrottlingDuration` of the limiter (the larger of its buckets') in ms, rounded up."""
        nanos = max(bucket.throttling_ns(t_ns) for bucket, _ in self.buckets)
        return -(-nanos // NS_PER_MS)


@dataclass
class _Pause:
    """A notice being built: its paused connections and intervals, with and without notices."""

    event: dict[str, Any]
    reason: Reason
    pause_for_millis: int
    receipt: str
    connections: Sequence[str]
    with_notices: tuple[int, int]
    without_notices: tuple[int, int]


class BrokerEvaluation:
    """The limiters and connection state of one broker, fed its events in order."""

    def __init__(self, config: NoticeConfig, broker: str) -> None:
        self.config = config
        self.broker = broker
        self.topic_limiters: dict[str, _Limiter | None] = {}
        self.group_limiters: dict[str, _Limiter] = {}
        self.broker_limiter: _Limiter | None = None
        self.throttled_until: dict[tuple[Any, ...], int] = {}
        self.pending: dict[str, list[int]] = defaultdict(list)  # connection -> heap of completions
        self.pending_paused_until: dict[str, int] = {}
        self.thread_of: dict[str, int] = {}
        self.thread_connections: dict[int, list[str]] = defaultdict(list)
        self.thread_bytes: dict[int, list[tuple[int, int]]] = defaultdict(list)  # heap of (completion, bytes)
        self.thread_total: dict[int, int] = defaultdict(int)
        self.buffer_paused_until: dict[int, int] = {}

    def run(self, events: list[dict[str, Any]]) -> list[Notice]:
        pauses: list[_Pause] = []
        for event in events:
            pauses += self.step(event)
        timeline = _Timeline(events)
        return [self._notice(p, timeline) for p in pauses]

    def step(self, e: dict[str, Any]) -> list[_Pause]:
        """The notices one event starts, in `REASON_ORDER`."""
        t = e["ts_ms"]
        t_ns = t * NS_PER_MS
        out: list[_Pause] = []
        rate_limiters = self._rate_limiters(e, t_ns)
        for reason, key, limiter in rate_limiters:
            if limiter.consume(t_ns, e["messages"], e["bytes"]) and self._starts(key, e, t):
                out.append(self._rate_pause(e, reason, key, limiter, t_ns))
        out += self._pending(e)
        out += self._buffer(e)
        return out

    def _rate_limiters(self, e: dict[str, Any], t_ns: int) -> list[tuple[Reason, tuple[Any, ...], _Limiter]]:
        config, topic = self.config, e["topic"]
        limiters = []
        if topic not in self.topic_limiters:
            rate = config.topic_rate(topic)
            self.topic_limiters[topic] = _Limiter(rate, t_ns) if rate is not None else None
        if (topic_limiter := self.topic_limiters[topic]) is not None:
            limiters.append((Reason.TopicProduceQuotaExceeded, ("topic", topic), topic_limiter))
        group = config.resource_group(topic)
        if group is not None:
            name, rate = group
            if name not in self.group_limiters:
                self.group_limiters[name] = _Limiter(rate, t_ns)
            limiters.append((Reason.ResourceGroupProduceQuotaExceeded, ("group", name),
                             self.group_limiters[name]))
        if config.broker_rate.limited:
            if self.broker_limiter is None:
                self.broker_limiter = _Limiter(config.broker_rate, t_ns)
            limiters.append((Reason.BrokerProduceQuotaExceeded, ("broker",), self.broker_limiter))
        return limiters

    def _starts(self, key: tuple[Any, ...], e: dict[str, Any], t: int) -> bool:
        """A breach starts a notice unless the producer is still throttled by the same limiter."""
        return t >= self.throttled_until.get((*key, e["connection_id"], e["producer_id"]), t)

    def _receipt(self, e: dict[str, Any]) -> str:
        if not e["supports_throttle"]:
            return UNSUPPORTED
        latency = e["receipt_latency_ms"]
        return IN_TIME if latency is not None and latency <= self.config.receipt_wait_ms else LATE

    def _rate_pause(self, e: dict[str, Any], reason: Reason, key: tuple[Any, ...], limiter: _Limiter,
                    t_ns: int) -> _Pause:
        t = e["ts_ms"]
        pause = limiter.pause_ms(t_ns)
        if not reason.connection_level and self.config.pause_rule == "rest-of-second":
            pause = 1000 - t % 1000
        self.throttled_until[(*key, e["connection_id"], e["producer_id"])] = t + pause
        receipt = self._receipt(e)
        today = (t, t + pause)
        if reason.connection_level:  # the broker rate: paused anyway, a pause of 0 sent
            return _Pause(e, reason, 0, receipt, (e["connection_id"],), today, today)
        with_notices = {IN_TIME: (t, t), LATE: (t + self.config.receipt_wait_ms, t + pause),
                        UNSUPPORTED: today}[receipt]
        return _Pause(e, reason, pause, receipt, (e["connection_id"],), with_notices, today)

    def _pending(self, e: dict[str, Any]) -> list[_Pause]:
        """`maxPendingPublishRequestsPerConnection` (docs/notices.md, Connection-level limits)."""
        t, connection = e["ts_ms"], e["connection_id"]
        heap = self.pending[connection]
        while heap and heap[0] <= t:
            heapq.heappop(heap)
        done = t + e["publish_latency_ms"]
        count = len(heap) + 1
        maximum = self.config.max_pending_requests
        out = []
        if maximum > 0 and count >= maximum and t >= self.pending_paused_until.get(connection, t):
            completions = sorted([*heap, done])
            end = completions[count - maximum // 2 - 1]
            self.pending_paused_until[connection] = end
            out.append(_Pause(e, Reason.ConnectionPendingMessagesBreach, 0, self._receipt(e), (connection,),
                              (t, end), (t, end)))
        heapq.heappush(heap, done)
        return out

    def _buffer(self, e: dict[str, Any]) -> list[_Pause]:
        """`maxMessagePublishBufferSizeInMB` per IO thread (docs/notices.md, Connection-level limits)."""
        t, connection = e["ts_ms"], e["connection_id"]
        if connection not in self.thread_of:
            thread = len(self.thread_of) % self.config.io_threads
            self.thread_of[connection] = thread
            self.thread_connections[thread].append(connection)
        thread = self.thread_of[connection]
        heap = self.thread_bytes[thread]
        while heap and heap[0][0] <= t:
            self.thread_total[thread] -= heapq.heappop(heap)[1]
        done = t + e["publish_latency_ms"]
        heapq.heappush(heap, (done, e["bytes"]))
        self.thread_total[thread] += e["bytes"]
        maximum = self.config.max_pending_bytes_per_thread
        paused = t < self.buffer_paused_until.get(thread, t)
        if maximum <= 0 or self.thread_total[thread] <= maximum or paused:
            return []
        remaining, end = self.thread_total[thread], t
        for completion, size in sorted(heap):
            if remaining <= maximum // 2:
                break
            remaining -= size
            end = completion
        self.buffer_paused_until[thread] = end
        # every connection of the thread: the thread's own list, which connections that come later
        # join too (Netty binds a channel to its event loop for life)
        return [_Pause(e, Reason.MessageBufferSizeBreach, 0, self._receipt(e),
                       self.thread_connections[thread], (t, end), (t, end))]

    def _notice(self, p: _Pause, timeline: _Timeline) -> Notice:
        e = p.event
        return Notice(
            ts_ms=e["ts_ms"], broker=self.broker, connection_id=e["connection_id"],
            producer_id=e["producer_id"], topic=e["topic"], reason=p.reason.name,
            pause_for_millis=p.pause_for_millis, receipt=p.receipt,
            connection_paused_ms=max(p.with_notices[1] - p.with_notices[0], 0),
            stalled_topics=timeline.stalled(p.connections, p.with_notices, e["topic"]),
            connection_paused_ms_without_notices=max(p.without_notices[1] - p.without_notices[0], 0),
            stalled_topics_without_notices=timeline.stalled(p.connections, p.without_notices, e["topic"]))


class _Timeline:
    """The broker's events per connection by time, to count the topics a pause stalled."""

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.times: dict[str, list[int]] = defaultdict(list)
        self.topics: dict[str, list[str]] = defaultdict(list)
        for e in events:  # already in time order
            self.times[e["connection_id"]].append(e["ts_ms"])
            self.topics[e["connection_id"]].append(e["topic"])

    def stalled(self, connections: Iterable[str], interval: tuple[int, int], own_topic: str) -> int:
        """Distinct topics other than `own_topic` with an event on `connections` in [start, end)."""
        start, end = interval
        if end <= start:
            return 0
        seen: set[str] = set()
        for connection in connections:
            times = self.times.get(connection, [])
            lo, hi = bisect_left(times, start), bisect_left(times, end)
            seen.update(self.topics[connection][lo:hi])
        seen.discard(own_topic)
        return len(seen)


def compare(notices: Iterable[Notice]) -> list[dict[str, Any]]:
    """`notice_comparison`: per (broker, topic, reason), with notices against without (docs/notices.md)."""
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    for n in notices:
        row = rows.setdefault((n.broker, n.topic, n.reason), dict.fromkeys(COMPARISON_COLUMNS, 0))
        row.update(broker=n.broker, topic=n.topic, reason=n.reason)
        row["notices"] += 1
        row[n.receipt] += 1
        row["pause_for_millis_total"] += n.pause_for_millis
        for column in ("connection_paused_ms", "connection_paused_ms_without_notices", "stalled_topics",
                       "stalled_topics_without_notices"):
            row[column] += getattr(n, column)
    return [rows[k] for k in sorted(rows)]
