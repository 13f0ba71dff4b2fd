"""One broker's requests judged with numpy: a loop over the broker's 5 s tick windows, not over requests.

spec: kafka-topic-bytes-in-quota; semantics as in `quotaplane.topics.engine.evaluate`.

What is sequential, and what is not. The one-minute rates are a linear recurrence over ticks, and a
tick's input (the bytes marked since the previous tick) depends on the decisions before it, which
depend on the rates: so the ticks are sequential, the requests between two ticks are not. A rate only
changes at a tick, thresholds do not depend on decisions (they are computed before, per request), so
every request between two ticks of its meters is judged with the same two rates, independently.

Formulation. Let `c` be the broker's first request. Its broker-wide meter ticks at `c + 5 s * k`,
which cuts time into windows `W_k = [c + 5 s k, c + 5 s (k + 1))`. A topic created at `c_j >= c`
ticks at `c_j + 5 s * l`: exactly once per window, at phase `p_j = (c_j - c) mod 5 s` into it (the
point `c + 5 s k + p_j` is a tick once it is past `c_j`). So for window k:

1. tick the broker meters (bytes marked in `W_(k-1)`; every broker rate is now fixed for `W_k`);
2. judge, vectorised, the window's requests before their topic's phase (old topic rate);
3. tick, vectorised over topics, every topic meter whose tick falls in `W_k` (bytes marked since its
   previous tick: the tail of `W_(k-1)` and step 2);
4. judge, vectorised, the window's requests at or after their topic's phase (new topic rate).

Marks are summed per (meter, topic) in int64 (exact, like the reference's ints), and a tick is
`rate + ALPHA * (count / 5e9 - rate)` elementwise in float64 (the broker's three meters as Python
floats): the same operations in the same order as `quotaplane.topics.engine.meter.tick_rate`, so
rates are bit-identical to the reference.

Layout, so that a window is a few numpy calls. Topics are renumbered by creation: the topics that
tick in a window (created in an earlier one) are a prefix, ticked as slices. Requests are regrouped
by part (a window's requests before their topic's tick, then those after), so a part is a slice.
Every request is first taken as accepted (or error, by size alone), and its bytes summed per part
and topic beforehand: while the broker rate is not above the total threshold nothing can be
throttled, so a part only gathers the topic rate its requests see and adds its summed marks. Only
in windows with the broker over are topic rates compared with thresholds, and the throttled bytes
moved from the bytes-in marks to the throttled ones.

Quiet windows. A window is quiet when the broker is not over the total threshold and no topic ticks
for the first time in it: nothing in it is throttled, so its marks are the requests' summed bytes,
known beforehand, and every live topic's tick is the same recurrence. The broker's rates of the
quiet windows ahead are worked out first, as Python floats, up to the first window over the total
(or with a topic's first tick, or idle, or the last); then the live topics' rates through that run
are a loop of three elementwise calls per window (`_quiet_ticks`), and each request's rate is taken
from them at once. The other windows (the broker over, a topic's first tick, the last) go through
steps 1 to 4 one by one.

Cost: one iteration per busy 5 s window of the broker that is not quiet (and the window after it),
each a fixed number of numpy calls over that window's requests and the broker's topics, independent
of the request count, and three elementwise calls per quiet window. After an idle window nothing is
left marked, so the idle windows up to the next busy one (or the last) only decay each meter: they
run as one tight elementwise loop (`_decay`), which stops early at the recurrence's fixed point (the
rate stops changing after about 8,800 idle ticks, about 12 h, at a tiny subnormal value). All are
exact: the same ticks in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from quotaplane.topics.engine.meter import M1_ALPHA, NANOS_PER_SECOND, TICK_MS, TICK_NANOS

ACCEPTED, THROTTLED, ERROR = 0, 1, 2  # decision codes, also the meter index (bytes in, throttled, error)
# the most (windows x topics) a run of quiet windows holds at once: its marks are 48 bytes a cell
QUIET_CELLS = 200_000


@dataclass
class BrokerResult:
    """Per request (in the order given): decision code and the two rates seen; per meter: counts and
    one-minute rates as of `as_of_ms` (`topic_*` has shape (3, topics), `broker_*` shape (3,))."""

    decision: np.ndarray
    total_rate: np.ndarray
    topic_rate: np.ndarray
    topic_created_ms: np.ndarray
    topic_count: np.ndarray
    topic_one_minute_rate: np.ndarray
    broker_count: np.ndarray
    broker_one_minute_rate: np.ndarray


def _tick(rate: np.ndarray, initialized: np.ndarray, count: np.ndarray) -> np.ndarray:
    """`EWMA.tick()` elementwise (see `meter.tick_rate`)."""
    instant = count.astype(np.float64) / TICK_NANOS
    return np.where(initialized, rate + M1_ALPHA * (instant - rate), instant)


def evaluate_broker(ts: np.ndarray, topic: np.ndarray, size: np.ndarray, topic_threshold: np.ndarray,
                    n_topics: int, total_threshold: int, message_max_bytes: int,
                    as_of_ms: int) -> BrokerResult:
    """Judge one broker's requests.

    `ts` (int64) must be sorted ascending; `topic` holds topic codes in `[0, n_topics)`, every code
    used at least once; `topic_threshold` is each request's topic threshold (int64) as of its time.
    `as_of_ms >= ts[-1]` is when the final meters are read.
    """
    broker = _Broker(ts.astype(np.int64, copy=False), topic.astype(np.int64, copy=False),
                     size.astype(np.int64, copy=False), topic_threshold, n_topics, message_max_bytes,
                     as_of_ms)
    broker.run(float(total_threshold))
    return broker.result()


class _Broker:
    """One broker's requests laid out for the loop over its windows (`__init__`, see "Layout"), and
    the meters' state as the loop (`run`) goes: `rate` and `pending` per (meter, topic rank), the
    broker's three meters as Python floats, and per request (in part order) its decision and the
    topic rate it saw."""

    def __init__(self, ts: np.ndarray, topic: np.ndarray, size: np.ndarray, topic_threshold: np.ndarray,
                 n_topics: int, message_max_bytes: int, as_of_ms: int) -> None:
        n = len(ts)
        error = size > message_max_bytes
        self.n, self.n_topics, self.as_of_ms = n, n_topics, as_of_ms
        self.created = created = _first_times(ts, topic, n_topics)
        origin = int(ts[0]) if n else as_of_ms
        self.origin, self.last_window = origin, (as_of_ms - origin) // TICK_MS

        # Topics renumbered by creation: the topics live in a window (created in an earlier one) are
        # a prefix, ticked with slices.
        self.order = order = np.argsort(created, kind="stable")
        self.rank = rank = np.empty(n_topics, dtype=np.int64)
        rank[order] = np.arange(n_topics)
        self.phase = phase = (created[order] - origin) % TICK_MS
        self.born = ((created[order] - origin) // TICK_MS).tolist()  # each topic's window, ascending
        t = rank[topic]

        # Requests regrouped by part (a window's requests before their topic's tick, then those at or
        # after it) and by topic within a part: a part is a slice, and so are its requests of one
        # topic. `perm[j]` is the request at position j. A part's requests are judged independently
        # of each other, so their order within it does not matter.
        window_of = (ts - origin) // TICK_MS  # ascending, like `ts`
        after = (ts - origin - window_of * TICK_MS) >= phase[t]
        accepted_size, error_size = np.where(error, 0, size), np.where(error, size, 0)
        part_topic = (2 * window_of + after) * n_topics + t
        self.perm = perm = np.argsort(part_topic)
        part_topic, self.t, self.size = part_topic[perm], t[perm], size[perm]
        self.part = part = part_topic // n_topics
        # Java compares double > long as double > (double) long
        self.thr = topic_threshold[perm].astype(np.float64)
        self.error = error[perm]
        window_start = run_starts(window_of)
        busy_window = window_of[window_start]
        self.window_index = np.repeat(np.arange(len(window_start)), np.diff(np.r_[window_start, n]))
        self.lo, self.mid, self.hi = (np.searchsorted(part, 2 * busy_window + i).tolist() for i in range(3))
        # Marks per part and topic, as if no request were throttled (accepted, or error).
        u_start = run_starts(part_topic)
        self.u_part = u_part = part[u_start]
        self.u_topic = self.t[u_start]
        self.u_accepted = _run_sums(accepted_size[perm], u_start)
        self.u_error = _run_sums(error_size[perm], u_start)
        self.u_lo, self.u_mid, self.u_hi = (np.searchsorted(u_part, 2 * busy_window + i).tolist()
                                            for i in range(3))
        w_accepted, w_error = _run_sums(accepted_size, window_start), _run_sums(error_size, window_start)
        self.windows = busy_window.tolist()
        self.window_marks = list(zip(w_accepted.tolist(), w_error.tolist(), strict=True))

        self.decision = np.where(self.error, ERROR, ACCEPTED).astype(np.int8)
        self.seen = np.zeros(n)  # the topic rate each request saw, per nanosecond
        self.window_rate = np.zeros(len(busy_window))  # the broker rate of each busy window, bytes/s
        self.rate = np.zeros((3, n_topics))
        self.pending = np.zeros((3, n_topics), dtype=np.int64)
        self.ticked = 0  # topics [0, ticked) have had their first tick
        self.live = 0  # topics [0, live) were created before the current window
        self.broker_rate = (0.0, 0.0, 0.0)

    def run(self, total: float) -> None:
        """Every window from the first request's to the one holding `as_of_ms`: quiet runs at once,
        the other busy windows by steps 1 to 4, idle stretches decayed at once."""
        windows, born, n_topics, last_window = self.windows, self.born, self.n_topics, self.last_window
        quiet_limit = max(8, QUIET_CELLS // max(n_topics, 1))
        initialized = False
        pending = (0, 0, 0)  # the broker's marks since its last tick
        p = 0  # the next busy window (one holding requests)
        k = 0
        while k <= last_window:
            busy = p < len(windows) and windows[p] == k
            if k >= 1:  # 1. broker tick at the window's start
                self.broker_rate = _broker_tick(self.broker_rate, initialized, pending)
                initialized = True
                pending = (0, 0, 0)
            bytes_per_second = self.broker_rate[ACCEPTED] * NANOS_PER_SECOND
            over = bytes_per_second > total
            while self.live < n_topics and born[self.live] < k:  # the topics that tick in this window
                self.live += 1
            if busy and not over and self.live == self.ticked and k < last_window:
                # quiet windows: nothing throttled, no topic's first tick
                first_tick = born[self.live] + 1 if self.live < n_topics else last_window
                length = self._run_quietly(k, p, min(k + quiet_limit, last_window, first_tick), total)
                accepted_bytes, error_bytes = self.window_marks[p + length - 1]
                pending = (accepted_bytes, 0, error_bytes)
                p += length
                k += length
                continue
            throttled = 0
            if busy:
                self.window_rate[p] = bytes_per_second
                throttled += self._mark(p, self.lo[p], self.mid[p], self.u_lo[p], self.u_mid[p], over)  # 2.
            if k < last_window:
                self._tick_live_topics()  # 3.
            else:
                self._tick_due(self.origin + k * TICK_MS)
            if busy:
                throttled += self._mark(p, self.mid[p], self.hi[p], self.u_mid[p], self.u_hi[p], over)  # 4.
                accepted_bytes, error_bytes = self.window_marks[p]
                pending = (accepted_bytes - throttled, throttled, error_bytes)
                p += 1
            else:
                # An idle window leaves nothing marked: every window up to the next busy one (or the
                # last) only decays each meter created so far by one tick. Run those ticks at once.
                target = min(windows[p], last_window) if p < len(windows) else last_window
                if target > k + 1:
                    decayed_broker, decayed = _decay(np.array(self.broker_rate), self.rate[:, :self.ticked],
                                                     target - k - 1)
                    self.broker_rate = tuple(decayed_broker.tolist())
                    self.rate[:, :self.ticked] = decayed
                    k = target
                    continue
            k += 1

    def _mark(self, i: int, a: int, b: int, ua: int, ub: int, over: bool) -> int:
        """Judge and mark the requests [a, b) of busy window i; the bytes throttled."""
        if a == b:
            return 0
        t, seen, marked_in = self.t, self.seen, self.pending[ACCEPTED]
        self.rate[ACCEPTED].take(t[a:b], out=seen[a:b])
        u_codes = self.u_topic[ua:ub]
        marked_in[u_codes] += self.u_accepted[ua:ub]
        _, error_bytes = self.window_marks[i]
        if error_bytes:
            self.pending[ERROR][u_codes] += self.u_error[ua:ub]
        if not over:
            return 0
        error = self.error[a:b]
        throttled = a + np.flatnonzero((seen[a:b] * NANOS_PER_SECOND > self.thr[a:b]) & ~error)
        if not len(throttled):
            return 0
        self.decision[throttled] = THROTTLED
        codes, sizes = t[throttled], self.size[throttled]
        np.subtract.at(marked_in, codes, sizes)
        np.add.at(self.pending[THROTTLED], codes, sizes)
        return int(sizes.sum())

    def _tick_live_topics(self) -> None:
        """Step 3 of a window before the last: tick every topic created before it."""
        live, ticked, rate, pending = self.live, self.ticked, self.rate, self.pending
        if live:
            instant = pending[:, :live] / TICK_NANOS
            if ticked:
                old = rate[:, :ticked]
                old += M1_ALPHA * (instant[:, :ticked] - old)
            if live > ticked:
                rate[:, ticked:live] = instant[:, ticked:live]
            pending[:, :live] = 0
        self.ticked = live

    def _tick_due(self, start: int) -> None:
        """Step 3 of the last window (starting at `start`): only the ticks at or before `as_of_ms`."""
        due = np.flatnonzero(start + self.phase[:self.live] <= self.as_of_ms)
        if len(due):
            initialized = np.broadcast_to(due < self.ticked, (3, len(due)))
            self.rate[:, due] = _tick(self.rate[:, due], initialized, self.pending[:, due])
            self.pending[:, due] = 0

    def _run_quietly(self, k: int, i: int, end: int, total: float) -> int:
        """Window k (busy window i, quiet, its broker tick done) and the quiet windows after it,
        before `end`: mark, tick and read every live topic's meters in them at once (see
        `_quiet_ticks`). The run's length."""
        rates, self.broker_rate = _quiet_broker(self.broker_rate, k, end, self.windows, i,
                                                self.window_marks, total)
        length = len(rates)
        self.window_rate[i:i + length] = rates
        live, rate, pending, n_topics = self.live, self.rate, self.pending, self.n_topics
        ua, ub = self.u_lo[i], self.u_hi[i + length - 1]
        marks = np.zeros((2 * length + 1, 3, n_topics), dtype=np.int64)
        marks[0] = pending
        rows = self.u_part[ua:ub] - (2 * k - 1)
        marks[rows, ACCEPTED, self.u_topic[ua:ub]] = self.u_accepted[ua:ub]
        marks[rows, ERROR, self.u_topic[ua:ub]] = self.u_error[ua:ub]
        history = _quiet_ticks(marks, rate[:, :live])
        rate[:, :live] = history[-1]
        pending[:, :live] = marks[-1, :, :live]
        pending[:, live:] = marks[:, :, live:].sum(axis=0)  # created in the last window: no tick yet
        a, b = self.lo[i], self.hi[i + length - 1]
        if live:  # a request before its topic's tick in window k + j saw row j, at or after it row j + 1
            codes = self.t[a:b]
            row = (self.part[a:b] - (2 * k - 1)) // 2
            self.seen[a:b] = np.where(codes < live, history[row, ACCEPTED, np.minimum(codes, live - 1)], 0.0)
        return length

    def result(self) -> BrokerResult:
        """The decisions and rates per request in the order given, and the meters as of `as_of_ms`."""
        n, n_topics, perm, t = self.n, self.n_topics, self.perm, self.t
        decision = np.empty(n, dtype=np.int8)
        decision[perm] = self.decision
        topic_rate = np.empty(n)
        topic_rate[perm] = self.seen * NANOS_PER_SECOND
        total_rate = self.window_rate[self.window_index] if n else np.zeros(0)
        topic_count = np.zeros((3, n_topics), dtype=np.int64)
        cells = self.decision.astype(np.int64) * n_topics + self.order[t]
        np.add.at(topic_count.reshape(-1), cells, self.size)
        return BrokerResult(decision, total_rate, topic_rate, self.created, topic_count,
                            self.rate[:, self.rank] * NANOS_PER_SECOND, topic_count.sum(axis=1),
                            np.array(self.broker_rate) * NANOS_PER_SECOND)


def _broker_tick(rate: tuple[float, float, float], initialized: bool,
                 counts: tuple[int, int, int]) -> tuple[float, float, float]:
    """`EWMA.tick()` of the broker's three meters, as Python floats (see `meter.tick_rate`)."""
    r0, r1, r2 = rate
    c0, c1, c2 = counts
    if initialized:
        return (r0 + M1_ALPHA * (c0 / TICK_NANOS - r0), r1 + M1_ALPHA * (c1 / TICK_NANOS - r1),
                r2 + M1_ALPHA * (c2 / TICK_NANOS - r2))
    return (c0 / TICK_NANOS, c1 / TICK_NANOS, c2 / TICK_NANOS)


def _quiet_broker(rate: tuple[float, float, float], k: int, end: int, windows: list[int], p: int,
                  marks: list[tuple[int, int]], total: float
                  ) -> tuple[list[float], tuple[float, float, float]]:
    """The broker rates (bytes/s) of window k (quiet, busy window p, its broker tick done: `rate`)
    and of the quiet windows right after it, before `end`: each busy, with the broker not over the
    total threshold once ticked with the previous window's marks, nothing of which was throttled.
    Also the broker meters' rates in the last of them. Every tick here is a later one: a run from
    window 0 ends there, since the first request's topic ticks first in window 1."""
    rates = [rate[ACCEPTED] * NANOS_PER_SECOND]
    j, q = k + 1, p + 1
    while j < end and q < len(windows) and windows[q] == j:
        accepted_bytes, error_bytes = marks[q - 1]
        ticked = _broker_tick(rate, True, (accepted_bytes, 0, error_bytes))
        bytes_per_second = ticked[ACCEPTED] * NANOS_PER_SECOND
        if bytes_per_second > total:
            break
        rate = ticked
        rates.append(bytes_per_second)
        j, q = j + 1, q + 1
    return rates, rate


def _quiet_ticks(marks: np.ndarray, rate: np.ndarray) -> np.ndarray:
    """The live topics' rates through a run of L quiet windows: `marks` (2L + 1, 3, topics) holds
    the bytes pending before the run, then each window's marks before and at or after its topics'
    ticks; `rate` (3, live) the live topics' rates before the run, all initialised. Row j of the
    answer (L + 1, 3, live) is the rates after j windows' ticks, by the same operations in the
    same order as `_tick`: a loop over windows of three elementwise calls."""
    length, live = (len(marks) - 1) // 2, rate.shape[1]
    history = np.empty((length + 1, 3 * live))
    history[0] = rate.reshape(-1)
    if live:
        counts = marks[:-1, :, :live].reshape(length, 2, 3 * live).sum(axis=1)
        step, alpha = np.empty(3 * live), np.full(3 * live, M1_ALPHA)
        before = history[0]
        for instant, after in zip(counts / TICK_NANOS, history[1:], strict=True):
            np.subtract(instant, before, out=step)
            np.multiply(alpha, step, out=step)
            np.add(before, step, out=after)
            before = after
    return history.reshape(length + 1, 3, live)


def _first_times(ts: np.ndarray, topic: np.ndarray, n_topics: int) -> np.ndarray:
    """Each topic's first request time (`ts` ascending). Codes numbered in order of first appearance
    (as `pd.factorize(sort=False)` numbers them) are found in one pass; others by a minimum per code."""
    if len(topic):
        new = topic > np.maximum.accumulate(np.r_[-1, topic[:-1]])
        if np.count_nonzero(new) == n_topics:
            return ts[new]
    created = np.full(n_topics, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(created, topic, ts)
    return created


def run_starts(values: np.ndarray) -> np.ndarray:
    """Where each run of equal values in `values` (sorted) starts."""
    if not len(values):
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.r_[True, values[1:] != values[:-1]])


def _run_sums(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The exact (int64) sum of each run of `values` that `starts` begin."""
    return np.add.reduceat(values, starts) if len(starts) else np.zeros(0, dtype=values.dtype)


def _decay(broker: np.ndarray, topics: np.ndarray, ticks: int) -> tuple[np.ndarray, np.ndarray]:
    """`ticks` idle ticks of initialised meters (count 0, so the instant rate is 0.0), in place.

    Stops early once a block of ticks changed nothing (the fixed point): later ticks are no-ops.
    """
    values = np.concatenate([broker, topics.reshape(-1)])
    step = np.empty_like(values)
    done = 0
    while done < ticks:
        block = min(32, ticks - done)
        before = values.copy()
        for _ in range(block):
            np.subtract(0.0, values, out=step)  # _tick: rate + ALPHA * (instant - rate)
            np.multiply(M1_ALPHA, step, out=step)
            np.add(values, step, out=values)
        done += block
        if np.array_equal(before, values):
            break
    return values[:3], values[3:].reshape(topics.shape)
