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

Marks are summed per (meter, topic) with `np.add.at` in int64 (exact, like the reference's ints), and
a tick is `rate + ALPHA * (count / 5e9 - rate)` elementwise in float64: the same operations in the same
order as `quotaplane.topics.engine.meter.tick_rate`, so rates are bit-identical to the reference.

Cost: one iteration per busy 5 s window of the broker (and the window after it), each a fixed
number of numpy calls over that window's requests and the broker's topics, independent of the
request count. After an idle window nothing is left marked, so the idle windows up to the next busy
one (or the last) only decay each meter: they run as one tight elementwise loop (`_decay`), which
stops early at the recurrence's fixed point (the rate stops changing after about 8,800 idle ticks,
about 12 h, at a tiny subnormal value). Both are exact: the same ticks in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from quotaplane.topics.engine.meter import M1_ALPHA, NANOS_PER_SECOND, TICK_MS, TICK_NANOS

ACCEPTED, THROTTLED, ERROR = 0, 1, 2  # decision codes, also the meter index (bytes in, throttled, error)


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
    n = len(ts)
    ts = ts.astype(np.int64, copy=False)
    size = size.astype(np.int64, copy=False)
    topic = topic.astype(np.int64, copy=False)
    thr = topic_threshold.astype(np.float64)  # Java compares double > long as double > (double) long
    total = float(total_threshold)
    decision = np.zeros(n, dtype=np.int8)
    total_rate = np.zeros(n)
    topic_rate = np.zeros(n)
    error = size > message_max_bytes

    created = np.full(n_topics, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(created, topic, ts)
    origin = int(ts[0]) if n else as_of_ms
    phase = (created - origin) % TICK_MS

    rate = np.zeros((3, n_topics))
    initialized = np.zeros((3, n_topics), dtype=bool)
    pending = np.zeros((3, n_topics), dtype=np.int64)
    flat_pending = pending.reshape(-1)
    b_rate = np.zeros(3)
    b_initialized = np.zeros(3, dtype=bool)
    b_pending = np.zeros(3, dtype=np.int64)

    def judge(idx: np.ndarray, broker_over: bool) -> None:
        if not len(idx):
            return
        codes = topic[idx]
        seen = rate[ACCEPTED, codes] * NANOS_PER_SECOND
        topic_rate[idx] = seen
        over = (seen > thr[idx]) if broker_over else np.zeros(len(idx), dtype=bool)
        d = np.where(error[idx], ERROR, np.where(over, THROTTLED, ACCEPTED)).astype(np.int8)
        decision[idx] = d
        np.add.at(flat_pending, d.astype(np.int64) * n_topics + codes, size[idx])
        np.add.at(b_pending, d, size[idx])

    last_window = (as_of_ms - origin) // TICK_MS
    window_of = (ts - origin) // TICK_MS
    busy_lo = np.flatnonzero(np.r_[True, window_of[1:] != window_of[:-1]]) if n else np.zeros(0, np.int64)
    busy_hi = np.r_[busy_lo[1:], n].astype(np.int64)
    busy_window = window_of[busy_lo]
    p = 0  # the next busy window (one holding requests)
    k = 0
    while k <= last_window:
        start = origin + k * TICK_MS
        lo = hi = 0
        if p < len(busy_window) and busy_window[p] == k:
            lo, hi = int(busy_lo[p]), int(busy_hi[p])
            p += 1
        if k >= 1:  # 1. broker tick at `start`
            b_rate = _tick(b_rate, b_initialized, b_pending)
            b_initialized[:] = True
            b_pending[:] = 0
        broker_rate = b_rate[ACCEPTED] * NANOS_PER_SECOND
        broker_over = bool(broker_rate > total)
        total_rate[lo:hi] = broker_rate
        offset = ts[lo:hi] - start
        window_phase = phase[topic[lo:hi]]
        judge(lo + np.flatnonzero(offset < window_phase), broker_over)  # 2.
        tick_at = start + phase  # 3. topic ticks
        due = np.flatnonzero((created < tick_at) & (tick_at <= as_of_ms))
        if len(due):
            rate[:, due] = _tick(rate[:, due], initialized[:, due], pending[:, due])
            initialized[:, due] = True
            pending[:, due] = 0
        judge(lo + np.flatnonzero(offset >= window_phase), broker_over)  # 4.
        if hi == lo:
            # An idle window leaves nothing marked: every window up to the next busy one (or the
            # last) only decays each meter created so far by one tick. Run those ticks at once.
            target = min(int(busy_window[p]), last_window) if p < len(busy_window) else last_window
            if target > k + 1:
                live = np.flatnonzero(created < start + TICK_MS)
                b_rate, decayed = _decay(b_rate, rate[:, live], target - k - 1)
                rate[:, live] = decayed
                k = target
                continue
        k += 1

    topic_count = np.zeros((3, n_topics), dtype=np.int64)
    np.add.at(topic_count.reshape(-1), decision.astype(np.int64) * n_topics + topic, size)
    return BrokerResult(decision, total_rate, topic_rate, created, topic_count, rate * NANOS_PER_SECOND,
                        topic_count.sum(axis=1), b_rate * NANOS_PER_SECOND)


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
