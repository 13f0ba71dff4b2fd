"""Topic thresholds as of a time: explicit ones, and the default share of the others.

spec: kafka-topic-bytes-in-quota (Low level design, 1). A topic with an explicit threshold has it; any
other topic gets

    (total.bytes.in.per.sec.threshold - sum of explicit thresholds) // (topics without one)

recomputed whenever a threshold changes or a topic appears. The quotient is rounded down to a whole
byte/s because the spec's `TopicQuota.recordQuota` takes the expected topic rate as a Long.

The topic set of a broker at time t is the configured topics (every topic with an accepted setting
in force at or before t) plus the topics of every request that broker judged at or before t: a
broker's LogManager knows the topics it hosts. So all requests of one broker at the same millisecond
see the same topic set, whatever their order.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from quotaplane.core.javamath import LONG_MIN
from quotaplane.topics.config import ThresholdChange, TopicQuotaConfig
from quotaplane.topics.engine.decision import DEFAULT_SHARE, EXPLICIT

# When the plain keys take effect: the smallest LONG, at or before any request.
SINCE_START = LONG_MIN


def _effective(change: ThresholdChange) -> int:
    return SINCE_START if change.ts_ms is None else change.ts_ms


@dataclass(frozen=True)
class Threshold:
    """A topic's threshold at a time and where it came from (`explicit` or `default`)."""

    value: int
    source: str


class ThresholdSchedule:
    """The accepted threshold settings of a config, in effect order (`schedule_changes` derived the
    explicit sum and count after each), answering 'as of t' questions by bisection; its views
    (`explicit_intervals`, `configured`, `deltas`) are what the Spark transform joins and sums."""

    def __init__(self, config: TopicQuotaConfig) -> None:
        self.total = config.total_threshold
        self.changes = config.accepted_changes
        self._topic_times: dict[str, list[int]] = {}
        self._topic_values: dict[str, list[int | None]] = {}
        self._step_times = [_effective(c) for c in self.changes]
        self._step_sums = [c.explicit_sum for c in self.changes]
        self._step_counts = [c.explicit_count for c in self.changes]
        self.configured: list[tuple[int, str]] = []  # (time a topic enters the configured set, topic)
        for change, ts in zip(self.changes, self._step_times, strict=True):
            if change.topic not in self._topic_times:
                self.configured.append((ts, change.topic))
            self._topic_times.setdefault(change.topic, []).append(ts)
            self._topic_values.setdefault(change.topic, []).append(change.threshold)

    def explicit_intervals(self) -> list[tuple[str, int, int | None, int]]:
        """`(topic, from_ms, to_ms or None, threshold)`: when each explicit threshold is in force
        (the last setting of a millisecond wins, as `explicit_at` bisects)."""
        out: list[tuple[str, int, int | None, int]] = []
        for topic, times in self._topic_times.items():
            values = self._topic_values[topic]
            last = [i for i in range(len(times)) if i + 1 == len(times) or times[i + 1] != times[i]]
            for j, i in enumerate(last):
                if values[i] is not None:
                    to_ms = times[last[j + 1]] if j + 1 < len(last) else None
                    out.append((topic, times[i], to_ms, values[i]))
        return out

    def steps(self) -> tuple[list[int], list[int], list[int]]:
        """When each setting takes effect (ascending), and the explicit sum and count after it."""
        return list(self._step_times), list(self._step_sums), list(self._step_counts)

    def explicit_at(self, topic: str, ts_ms: int) -> int | None:
        """The topic's explicit threshold in force at `ts_ms`, or None."""
        times = self._topic_times.get(topic)
        if not times:
            return None
        i = bisect_right(times, ts_ms)
        return self._topic_values[topic][i - 1] if i else None

    def explicit_totals_at(self, ts_ms: int) -> tuple[int, int]:
        """(sum, number) of the explicit thresholds in force at `ts_ms`."""
        i = bisect_right(self._step_times, ts_ms)
        return (self._step_sums[i - 1], self._step_counts[i - 1]) if i else (0, 0)

    def threshold(self, topic: str, ts_ms: int, topic_set_size: int) -> Threshold:
        """The topic's threshold at `ts_ms` on a broker whose topic set then has `topic_set_size`
        topics (the topic itself included)."""
        explicit = self.explicit_at(topic, ts_ms)
        if explicit is not None:
            return Threshold(explicit, EXPLICIT)
        explicit_sum, explicit_count = self.explicit_totals_at(ts_ms)
        return Threshold((self.total - explicit_sum) // (topic_set_size - explicit_count), DEFAULT_SHARE)


class TopicSet:
    """The topic set of one broker, grown as time advances (configured topics and seen topics)."""

    def __init__(self, schedule: ThresholdSchedule) -> None:
        self._configured = schedule.configured
        self._next = 0
        self.members: set[str] = set()

    def advance(self, ts_ms: int) -> None:
        """Add the configured topics that have entered by `ts_ms`."""
        while self._next < len(self._configured) and self._configured[self._next][0] <= ts_ms:
            self.members.add(self._configured[self._next][1])
            self._next += 1

    def see(self, topic: str) -> None:
        self.members.add(topic)

    def __len__(self) -> int:
        return len(self.members)
