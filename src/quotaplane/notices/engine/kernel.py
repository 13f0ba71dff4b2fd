"""One broker's producer traffic -> its throttle notices, with numpy: loops over breaches, not events.

spec: pip-385-producer-throttle-protocol; the rules are docs/notices.md (The token bucket,
Connection-level limits, Notices, receipts and pauses), with the same results as the reference engine
`quotaplane.notices.engine.evaluate` (one event at a time).

What is sequential, and what is not. The offered traffic is replayed as recorded, so every balance
and every pending count is a function of the traffic alone; only the gating (a producer already
throttled by the same limiter, a connection or thread already paused) depends on earlier notices.

- Token buckets (one per limit of each topic, resource-group and broker limiter). The tokens made
  at an event depend only on the times: `d = gap + remainder` carries a remainder from event to
  event. When the rate is a multiple of 1000/s a millisecond makes whole tokens and nothing is
  carried (`made = gap_ms * rate / 1000`); when it divides 10^9 a token takes whole nanoseconds `q`,
  the carry is the time since the bucket's creation modulo `q` and the tokens made so far that time
  `// q`; both are vectorised. Otherwise (e.g. 1 MiB/s) the carry is path dependent: the carry is
  the exact remainder rounded up to a whole nanosecond, so each update can hand up to 1 ns back to
  the bucket, and two paths to the same time can differ. It is one Python step per event over small
  integers, a table lookup when the bucket's distinct gaps times its possible carries are few
  (`_Carries`); the tokens made follow from the carries with numpy. The balance of the clipped
  recurrence `x_n = min(x_(n-1) + made_n, cap) - c_n` is then, in closed form,
  `x_n = S_n + min(x_0, cummin_(k <= n)(cap - c_k - S_k))` with `S_n = sum_(k <= n)(made_k - c_k)`.
- The throttling duration of a notice is computed as Pulsar's `calculateThrottlingDuration` does and
  as the reference does (`TokenBucket.throttling_ns`): a forced update at the breach's time first.
  That update changes the bucket only when the carried nanoseconds make a token
  (`remainder * rate >= 1 s`, possible only in the third case above: a carry of `ceil(P / rate)`);
  the carries after that event are then computed again only until they meet the old ones, and the
  balances after it are brought up to date lazily, a window of events at a time, until one equals
  its old value where the same tokens are made again (`_Bucket.extend`).
- Gating: one pass over the breaches of each limiter, in event order, a window at a time (a new
  window after a forced update that changed a bucket), and over the breaches of each
  connection-level limit.
- Pending requests and bytes (per connection, per IO thread): the requests still pending at each
  read are counted with sorted completion times and `searchsorted` (`_pending`); the end of a pause
  is an order statistic of the completions pending at its breach.
- Stalled topics: for all notices at once, the distinct other topics of the paused connections
  inside each interval, with a merge-sort tree over each event's previous event of the same topic
  (`_Stalls`).

Integers. Every input is a LONG; sums and differences of them may not be. Each array is int64 when a
bound of its values shows they fit (`_fits`), otherwise it holds Python integers (`dtype=object`,
the same numpy calls, exact): the times relative to the broker's first event (`_Events`), the tokens
made and the balances of a bucket (`_Bucket`), the pending bytes of a thread. Per-notice arithmetic
(pauses, receipt waits, pause ends) is in Python integers. An output value beyond a LONG
(`pause_for_millis` of a balance driven below about -2^53 bytes at 1 B/s) is kept as a Python
integer: the output column is then of object dtype.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from quotaplane.core.records import Field, RecordSchema
from quotaplane.notices.config import NoticeConfig, PublishRate
from quotaplane.notices.engine.bucket import RATE_PERIOD_NS, duration_ns, new_tokens, target_tokens
from quotaplane.notices.engine.evaluate import (
    IN_TIME,
    LATE,
    NOTICE_COLUMNS,
    NS_PER_MS,
    REASON_ORDER,
    UNSUPPORTED,
)
from quotaplane.notices.protocol import Reason
from quotaplane.notices.records import normalise_topic

# The limits of a topic (`limits_of`, resolved once per distinct topic of a broker): the topic's
# publish rate (0: unlimited; both 0: no topic limiter), its resource group (null: none) and the
# group's rate.
LIMIT_COLUMNS = ("topic_bytes_per_s", "topic_messages_per_s", "resource_group", "group_bytes_per_s",
                 "group_messages_per_s")
NOTICE_RECORD = RecordSchema(
    name="notice_decisions",
    doc="One throttle notice (docs/notices.md, Outputs).",
    fields=tuple(Field(name, kind) for name, kind in (
        ("ts_ms", "time_ms"), ("broker", "string"), ("connection_id", "string"), ("producer_id", "long"),
        ("topic", "string"), ("reason", "string"), ("pause_for_millis", "long"), ("receipt", "string"),
        ("connection_paused_ms", "long"), ("stalled_topics", "long"),
        ("connection_paused_ms_without_notices", "long"), ("stalled_topics_without_notices", "long"))),
)

_SAFE = 2**62  # a bound below this keeps a sum of two values inside int64
_RANK = {reason: i for i, reason in enumerate(REASON_ORDER)}
TOPIC, GROUP, BROKER, PENDING, BUFFER = (_RANK[r] for r in (
    Reason.TopicProduceQuotaExceeded, Reason.ResourceGroupProduceQuotaExceeded,
    Reason.BrokerProduceQuotaExceeded, Reason.ConnectionPendingMessagesBreach,
    Reason.MessageBufferSizeBreach))


def _fits(bound: int) -> type:
    """int64 when every value (and a sum of two) is below `bound` in magnitude, else Python ints."""
    return np.int64 if bound < _SAFE else object


def _exact_sum(values: np.ndarray) -> int:
    """The exact sum of an integer array."""
    if not len(values):
        return 0
    if values.dtype != object and len(values) * max(abs(int(values.max())), abs(int(values.min()))) < _SAFE:
        return int(values.sum())
    return sum(int(v) for v in values.tolist())


def _event_order(ts: np.ndarray, ties: tuple[np.ndarray, ...]) -> np.ndarray:
    """The events' order by `ts`, then by the keys of `ties` (the last one first, as `np.lexsort`
    takes them): one sort by time, and the other keys only among events of the same time."""
    order = np.argsort(ts, kind="stable")
    at = ts[order]
    tied = np.r_[at[1:] == at[:-1], False] | np.r_[False, at[1:] == at[:-1]]
    if tied.any():
        rows = order[tied]  # runs of one time each, in time order: sorted among themselves in place
        order[tied] = rows[np.lexsort((*(k[rows] for k in ties), ts[rows]))]
    return order


def limits_of(config: NoticeConfig, topics: Sequence[str]) -> dict[str, list[Any]]:
    """`LIMIT_COLUMNS` for topics (docs/notices.md, Configuration: which rate applies to a topic)."""
    out: dict[str, list[Any]] = {c: [] for c in LIMIT_COLUMNS}
    for topic in topics:
        rate = config.topic_rate(topic) or PublishRate()
        group = config.resource_group(topic)
        group_rate = group[1] if group is not None else PublishRate()
        for column, value in zip(LIMIT_COLUMNS, (rate.bytes_per_s, rate.messages_per_s,
                                                 group[0] if group is not None else None,
                                                 group_rate.bytes_per_s, group_rate.messages_per_s),
                                 strict=True):
            out[column].append(value)
    return out


def _longs(events: pd.DataFrame, name: str, default: int, n: int) -> np.ndarray:
    if name not in events:
        return np.full(n, default, dtype=np.int64)
    return events[name].astype("Int64").fillna(default).to_numpy(np.int64)


@dataclass
class _Events:
    """One broker's events with the defaults applied, in the evaluation order (docs/notices.md,
    Notices: `EVENT_ORDER`, nulls first). `t` is ms since the first event (int64 or Python ints)."""

    n: int
    broker: str
    ts: np.ndarray
    t: np.ndarray
    end: np.ndarray  # t + publish_latency_ms: the completion
    connection: np.ndarray  # codes
    connection_names: np.ndarray
    producer_id: np.ndarray
    producer: np.ndarray  # codes of (connection, producer_id)
    topic: np.ndarray  # codes of the full names
    topic_names: np.ndarray
    bytes: np.ndarray
    messages: np.ndarray
    supports: np.ndarray
    receipt_known: np.ndarray  # whether the event has a receipt (`receipt_latency_ms` set, >= 0)
    receipt_ms: np.ndarray  # its receipt latency where known
    latency: np.ndarray
    limits: dict[str, np.ndarray]  # `LIMIT_COLUMNS` per event

    @staticmethod
    def of(config: NoticeConfig, events: pd.DataFrame) -> _Events:
        n = len(events)
        ts = events["ts_ms"].astype("Int64").to_numpy(np.int64)
        producer_id = events["producer_id"].astype("Int64").to_numpy(np.int64)
        size = events["bytes"].astype("Int64").to_numpy(np.int64)
        messages = _longs(events, "messages", 1, n)
        latency = _longs(events, "publish_latency_ms", 0, n)
        supports = (events["supports_throttle"].astype("boolean").fillna(False).to_numpy(bool)
                    if "supports_throttle" in events else np.zeros(n, dtype=bool))
        if "receipt_latency_ms" in events:
            raw = events["receipt_latency_ms"].astype("Int64")
            known = (raw.notna() & (raw.fillna(-1) >= 0)).to_numpy(bool)
            receipt_value = raw.fillna(0).to_numpy(np.int64)
        else:
            known, receipt_value = np.zeros(n, dtype=bool), np.zeros(n, dtype=np.int64)
        broker = events["broker"] if "broker" in events else pd.Series([None] * n, dtype=object)
        names = broker.dropna().unique()
        broker_name = str(names[0]) if len(names) else ""
        raw_topic, raw_names = pd.factorize(events["topic"].astype(object), sort=False)
        full = np.array([normalise_topic(str(t)) for t in raw_names], dtype=object)
        topic, topic_names = pd.factorize(full[raw_topic], sort=True)
        connection, connection_names = pd.factorize(events["connection_id"].astype(object), sort=True)
        # the order: ts, connection, producer, topic, bytes, messages, supports, receipt (null
        # first), publish latency
        order = _event_order(ts, (latency, receipt_value, known, supports, messages, size, topic,
                                  producer_id, connection))
        per_topic = limits_of(config, list(topic_names))  # once per distinct topic
        limits = {c: np.array(v, dtype=object if c == "resource_group" else np.int64)[topic[order]]
                  for c, v in per_topic.items()}
        ts, latency = ts[order], latency[order]
        span = int(ts[-1]) - int(ts[0]) if n else 0
        kind = _fits(span + (int(latency.max()) if n else 0))
        if kind is np.int64:
            t = ts - ts[0] if n else ts.copy()
            end = t + latency
        else:
            first = int(ts[0])
            t = np.array([int(v) - first for v in ts.tolist()], dtype=object)
            end = t + np.array(latency.tolist(), dtype=object)
        pair = pd.DataFrame({"c": connection[order], "p": producer_id[order]}).groupby(
            ["c", "p"], sort=False).ngroup().to_numpy(np.int64)
        return _Events(
            n=n, broker=broker_name, ts=ts, t=t, end=end, connection=connection[order].astype(np.int64),
            connection_names=np.asarray(connection_names, dtype=object),
            producer_id=producer_id[order], producer=pair.astype(np.int64),
            topic=topic[order].astype(np.int64), topic_names=np.asarray(topic_names, dtype=object),
            bytes=size[order], messages=messages[order], supports=supports[order],
            receipt_known=known[order], receipt_ms=receipt_value[order],
            latency=latency, limits=limits)


class _Carries:
    """The tokens made and the nanoseconds carried at each event of a bucket whose rate is neither a
    multiple of 1000/s nor a divisor of 10^9 (docs/notices.md, The token bucket: the update).

    With `g = gcd(rate, P)`, `P' = P / g` and `rate' = rate / g`, an update of `d = gap + carry` (ns)
    makes `new = d * rate' // P'` tokens (`new_tokens`' `a * rate + b * rate // P` for
    `d = a * P + b`) and carries `d - (new * P') // rate'` (its `b - ((b * rate // P) * P) // rate`),
    which is `ceil(u / rate')` with `u = d * rate' mod P'` (`new * P' = d * rate' - u`). Per event,
    `gap * rate' = whole * P' + rest`: the update makes `whole + (rest + carry * rate') // P'` tokens
    and carries `ceil(((rest + carry * rate') mod P') / rate')`, so the carry, at most
    `ceil(P' / rate')`, is one Python step per event (a table lookup when the table of gaps and
    carries is small) and the tokens made follow from the carries with numpy.
    """

    def __init__(self, gaps: np.ndarray, rate: int, kind: type) -> None:
        g = math.gcd(rate, RATE_PERIOD_NS)
        self.period, self.rate = RATE_PERIOD_NS // g, rate // g
        n = len(gaps)
        unique, index = np.unique(gaps, return_inverse=True)
        index = index.reshape(-1)
        whole, rest = [], []
        for gap in unique.tolist():
            w, r = divmod(int(gap) * NS_PER_MS * self.rate, self.period)
            whole.append(w)
            rest.append(r)
        rests = np.array(rest, dtype=np.int64)
        self.whole = np.array(whole, dtype=kind)[index]
        self.rest = rests[index]
        states = -(-self.period // self.rate) + 1  # carries 0 .. ceil(P' / rate')
        self.table: list[int] | None = None
        if len(unique) * states <= 2 * n + 65_536:
            table = (rests[:, None] + np.arange(states, dtype=np.int64) * self.rate) % self.period
            self.table = (-(-table // self.rate)).ravel().tolist()
            self.steps: list[int] = (index.astype(np.int64) * states).tolist()
        else:
            self.steps = self.rest.tolist()

    def carried(self, lo: int, hi: int, carry: int) -> np.ndarray:
        """The carries after events `lo .. hi - 1`, from the carry before `lo`."""
        out: list[int] = []
        append = out.append
        if self.table is not None:
            table = self.table
            for base in self.steps[lo:hi]:
                carry = table[base + carry]
                append(carry)
        else:
            rate, period = self.rate, self.period
            for rest in self.steps[lo:hi]:
                carry = -(-((rest + carry * rate) % period) // rate)
                append(carry)
        return np.array(out, dtype=np.int64)

    def made(self, lo: int, hi: int, before: np.ndarray) -> np.ndarray:
        """The tokens made at events `lo .. hi - 1`, from the carries before each."""
        return self.whole[lo:hi] + (self.rest[lo:hi] + before * self.rate) // self.period


_WINDOW = 1024  # events whose balances are brought up to date at once after a forced update


class _Bucket:
    """One token bucket over its limiter's events: tokens made, carries and balances per event.

    A forced update that changes the bucket (`throttling`) changes its state at one event; the
    balances after it are then brought up to date lazily, a window at a time (`extend`): the
    carries are recomputed only until they meet the old ones (from there on the same tokens are
    made), and the balances only until one equals its old value at an event after which the same
    tokens are made (from there on the old balances are the bucket's).
    """

    def __init__(self, rate: int, t: np.ndarray, consumed: np.ndarray) -> None:
        self.rate = rate
        self.target = target_tokens(rate)  # the balance a throttled producer waits for
        n = len(t)
        self.n = n
        gaps = np.diff(t, prepend=t[:1]) if n else t
        span = int(t[-1]) - int(t[0]) if n else 0
        # made <= span * rate / 1000 + (1 + rate / P) per update (the carry is below P / rate + 1),
        # and a forced update per event at most adds as much again
        made_bound = span * rate // 1000 + 2 * n * (rate // RATE_PERIOD_NS + 2)
        consumed_total = _exact_sum(consumed)
        self.kind = _fits(rate + made_bound + consumed_total + (int(consumed.max()) if n else 0))
        self.consumed = consumed if self.kind is np.int64 else np.array(consumed.tolist(), dtype=object)
        per_second = RATE_PERIOD_NS // NS_PER_MS
        if rate % per_second == 0:  # a millisecond makes whole tokens: nothing is ever carried
            self.made = gaps.astype(self.kind) * (rate // per_second)
            self.carried = np.zeros(n, dtype=np.int64)
        elif RATE_PERIOD_NS % rate == 0:
            # a token takes whole nanoseconds `q`: the carry is the time since the bucket's creation
            # modulo q, and the tokens made so far are that time // q
            q = RATE_PERIOD_NS // rate
            elapsed = (t - t[:1]).astype(_fits(span * NS_PER_MS)) * NS_PER_MS if n else t
            self.made = np.diff(elapsed // q, prepend=elapsed[:1] // q).astype(self.kind)
            self.carried = (elapsed % q).astype(np.int64)
        else:
            self.carries = _Carries(gaps, rate, self.kind)
            self.carried = self.carries.carried(0, n, 0)
            self.made = self.carries.made(0, n, np.r_[0, self.carried[:-1]])
        self.tokens = self._balance(self.made, self.consumed, rate)
        # `tokens[:valid]` are the bucket's balances; the later ones are old balances, each computed
        # from the one before it from `stale_from` on, with the tokens made after `dirty` as now
        self.valid = n
        self.dirty = -1
        self.stale_from = 0

    def _balance(self, made: np.ndarray, consumed: np.ndarray, start: Any) -> np.ndarray:
        """`x_n = min(x_(n-1) + made_n, cap) - c_n` from `x_0 = start`, in closed form."""
        if not len(made):
            return made
        s = np.cumsum(made - consumed)
        return s + np.minimum(start, np.minimum.accumulate(self.rate - consumed - s))

    def extend(self, upto: int) -> int:
        """Bring the balances up to date until at least event `upto` (or the last); returns how many
        are up to date."""
        upto = min(upto, self.n)
        if self.valid >= upto:
            return self.valid
        lo = self.valid
        fresh = self._balance(self.made[lo:upto], self.consumed[lo:upto], self.tokens[lo - 1])
        first = max(self.dirty, self.stale_from, lo)
        same = np.flatnonzero(np.asarray(fresh[first - lo:] == self.tokens[first:upto], dtype=bool))
        if len(same):  # the old balances from there on are the bucket's
            upto = first + int(same[0])
            self.tokens[lo:upto] = fresh[:upto - lo]
            self.valid, self.dirty, self.stale_from = self.n, -1, 0
            return self.n
        self.tokens[lo:upto] = fresh
        self.valid = upto
        self.stale_from = max(self.stale_from, upto)
        return upto

    def throttling(self, k: int) -> tuple[int, bool]:
        """`calculateThrottlingDuration` after event `k` (`TokenBucket.throttling_ns`; `k` below
        `valid`): the forced update at the event's time, then the time to the target balance; and
        whether the forced update changed the bucket (its later balances are then out of date)."""
        carry = int(self.carried[k])
        made, carried = new_tokens(carry, self.rate)
        carried = max(carried, 0)
        tokens = min(int(self.tokens[k]) + made, self.rate)
        changed = made != 0 or carried != carry
        if changed:
            self._restart(k, tokens, carried)
        if tokens > 0:
            return 0, changed
        return duration_ns(self.target - tokens, self.rate), changed

    def _restart(self, k: int, tokens: int, carried: int) -> None:
        """The state (`tokens`, `carried`) at event `k`: the carries after it are recomputed until
        they meet the old ones, the balances after it are out of date."""
        self.tokens[k] = tokens
        self.carried[k] = carried
        lo, size, remainder = k + 1, 64, carried
        while lo < self.n:
            hi = min(lo + size, self.n)
            new = self.carries.carried(lo, hi, remainder)
            met = np.flatnonzero(new == self.carried[lo:hi])
            stop = hi if not len(met) else lo + int(met[0]) + 1
            self.made[lo:stop] = self.carries.made(lo, stop, np.r_[remainder, new[:stop - lo - 1]])
            self.carried[lo:stop] = new[:stop - lo]
            self.dirty = max(self.dirty, stop - 1)
            if len(met):
                break
            lo, size, remainder = hi, 2 * size, int(new[-1])
        self.valid = k + 1


@dataclass
class _RateNotice:
    position: int
    reason: int
    pause_ms: int


def _rate_limiter(ev: _Events, positions: np.ndarray, rate: PublishRate, reason: int,
                  pause_rule: str) -> list[_RateNotice]:
    """The notices of one publish-rate limiter over its events (docs/notices.md, The token bucket;
    Notices: a producer throttled by the limiter gets no notice until the end of its pause)."""
    t = ev.t[positions]
    buckets = [_Bucket(r, t, consumed) for r, consumed in
               ((rate.messages_per_s, ev.messages[positions]), (rate.bytes_per_s, ev.bytes[positions]))
               if r > 0]
    times = t.tolist()  # Python integers, from int64 or object arrays alike
    producers = ev.producer[positions].tolist()
    ts = ev.ts[positions].tolist()
    throttled_until: dict[int, int] = {}
    out: list[_RateNotice] = []
    n = len(positions)
    start, window = 0, _WINDOW
    while start < n:
        end = min(b.extend(start + window) for b in buckets)
        breached = np.zeros(end - start, dtype=bool)
        for b in buckets:
            breached |= np.asarray(b.tokens[start:end] <= 0, dtype=bool)
        restart = None
        for k in (start + np.flatnonzero(breached)).tolist():
            p, tk = producers[k], times[k]
            if tk < throttled_until.get(p, tk):
                continue
            nanos, changed = 0, False
            for b in buckets:
                bucket_nanos, bucket_changed = b.throttling(k)
                nanos, changed = max(nanos, bucket_nanos), changed or bucket_changed
            pause = -(-nanos // NS_PER_MS)
            if reason != BROKER and pause_rule == "rest-of-second":
                pause = 1000 - ts[k] % 1000
            throttled_until[p] = tk + pause
            out.append(_RateNotice(int(positions[k]), reason, pause))
            if changed:
                restart = k + 1
                break
        if restart is None:
            start, window = end, 2 * window
        else:
            start, window = restart, _WINDOW
    return out


def _grouped(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Event positions grouped by code (each group in event order) and each group's first index."""
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]]) if len(codes) else \
        np.zeros(0, dtype=np.int64)
    return order, starts


def _pending(group: np.ndarray, t: np.ndarray, end: np.ndarray, latency: np.ndarray,
             amount: np.ndarray) -> np.ndarray:
    """Per event: its own `amount` plus those of the earlier events of its group still pending at its
    read, `ts_j + latency_j > ts_i` (docs/notices.md, Connection-level limits: completions at a time
    come before reads at that time). Sorted completions and `searchsorted`, no loop over events.

    `sum_(j < i, end_j > t_i) = sum_(j < i) - sum_(end_j <= t_i) + sum_(j >= i, end_j <= t_i)`, and
    a later `j` completes by `t_i` only at `t_i` itself with latency 0.
    """
    n = len(t)
    if not n:
        return amount.copy()
    order, starts = _grouped(group)
    g = group[order]
    tt, ee, xx = t[order], end[order], amount[order]
    sizes = np.diff(np.r_[starts, n])
    index = np.repeat(np.arange(len(starts)), sizes)  # the group's number per grouped event
    cs = np.cumsum(xx)
    base = (cs[starts] - xx[starts])[index]  # the amounts of the groups before
    earlier = cs - xx - base
    # completed by t_i: rank the completions and reads together, then search (group, rank)
    values = np.concatenate([ee, tt])
    _, rank = np.unique(values, return_inverse=True)
    rank = rank.reshape(-1).astype(np.int64)
    width = 2 * n + 1
    key_end = index.astype(np.int64) * width + rank[:n]
    by_end = np.argsort(key_end, kind="stable")
    done_cs = np.cumsum(xx[by_end])
    q = np.searchsorted(key_end[by_end], index.astype(np.int64) * width + rank[n:], side="right")
    done = np.where(q > 0, done_cs[np.maximum(q - 1, 0)], 0) - base
    # later events of the same read time with latency 0 (they complete at t_i)
    zero = np.where(latency[order] == 0, xx, 0 * xx)
    cz = np.cumsum(zero)
    run_start = np.flatnonzero(np.r_[True, (g[1:] != g[:-1]) | (tt[1:] != tt[:-1])])
    run_last = np.r_[run_start[1:], n] - 1
    run = np.repeat(np.arange(len(run_start)), np.diff(np.r_[run_start, n]))
    later_zero = cz[run_last][run] - (cz - zero)
    pending = xx + earlier - (done - later_zero)
    out = np.empty_like(pending)
    out[order] = pending
    return out


@dataclass
class _Scope:
    """The events of each group (connection or thread) in event order, for windows by time."""

    order: np.ndarray
    starts: np.ndarray
    position_in: np.ndarray  # event position -> index in `order`
    group_start: np.ndarray  # event position -> its group's first index in `order`
    group_end: np.ndarray

    @staticmethod
    def of(codes: np.ndarray) -> _Scope:
        order, starts = _grouped(codes)
        n = len(codes)
        position_in = np.empty(n, dtype=np.int64)
        position_in[order] = np.arange(n)
        sizes = np.diff(np.r_[starts, n])
        first = np.repeat(starts, sizes)
        group_start = np.empty(n, dtype=np.int64)
        group_start[order] = first
        group_end = np.empty(n, dtype=np.int64)
        group_end[order] = first + np.repeat(sizes, sizes)
        return _Scope(order, starts, position_in, group_start, group_end)

    def still_pending(self, ev: _Events, i: int, max_latency: int) -> np.ndarray:
        """The earlier events of `i`'s group pending at its read, and `i` (positions)."""
        lo, here = int(self.group_start[i]), int(self.position_in[i])
        window = self.order[lo:here]
        if len(window):
            since = np.searchsorted(ev.t[window], ev.t[i] - max_latency, side="right")
            window = window[since:]
            window = window[ev.end[window] > ev.t[i]]
        return np.r_[window, i]


def _pending_requests(ev: _Events, maximum: int) -> list[tuple[int, Any]]:
    """`maxPendingPublishRequestsPerConnection` breaches: (position, pause end) (docs/notices.md,
    Connection-level limits)."""
    if maximum <= 0 or not ev.n:
        return []
    count = _pending(ev.connection, ev.t, ev.end, ev.latency, np.ones(ev.n, dtype=np.int64))
    candidates = np.flatnonzero(count >= maximum)
    if not len(candidates):
        return []
    scope = _Scope.of(ev.connection)
    max_latency = int(ev.latency.max())
    paused_until: dict[int, Any] = {}
    out = []
    for i in candidates.tolist():
        c, ti = int(ev.connection[i]), int(ev.t[i])
        if ti < paused_until.get(c, ti):
            continue
        ends = ev.end[scope.still_pending(ev, i, max_latency)]
        k = int(count[i]) - maximum // 2  # the k-th earliest completion leaves max // 2 pending
        end = np.partition(ends, k - 1)[k - 1] if ends.dtype != object else sorted(ends.tolist())[k - 1]
        paused_until[c] = int(end)
        out.append((i, int(end)))
    return out


def _threads(ev: _Events, threads: int) -> np.ndarray:
    """The IO thread of each event's connection: round robin in order of first appearance."""
    first = np.full(len(ev.connection_names), ev.n, dtype=np.int64)
    np.minimum.at(first, ev.connection, np.arange(ev.n, dtype=np.int64))
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return (rank % threads)[ev.connection]


def _buffer(ev: _Events, thread: np.ndarray, maximum: int) -> list[tuple[int, Any]]:
    """Publish buffer breaches per IO thread: (position, pause end) (docs/notices.md,
    Connection-level limits: `PendingBytesPerThreadTracker`)."""
    if maximum <= 0 or not ev.n:
        return []
    amount = ev.bytes.astype(_fits(_exact_sum(ev.bytes)))
    pending = _pending(thread, ev.t, ev.end, ev.latency, amount)
    candidates = np.flatnonzero(np.asarray(pending > maximum, dtype=bool))
    if not len(candidates):
        return []
    scope = _Scope.of(thread)
    max_latency = int(ev.latency.max())
    paused_until: dict[int, Any] = {}
    out = []
    for i in candidates.tolist():
        th, ti = int(thread[i]), int(ev.t[i])
        if ti < paused_until.get(th, ti):
            continue
        members = scope.still_pending(ev, i, max_latency)
        by_end = sorted(zip(ev.end[members].tolist(), amount[members].tolist(), strict=True))
        remaining, end = int(pending[i]), ti
        for completion, size in by_end:
            if remaining <= maximum // 2:
                break
            remaining -= size
            end = completion
        paused_until[th] = end
        out.append((i, end))
    return out


class _Stalls:
    """Distinct other topics with an event on a group's connections inside an interval (docs/notices.md,
    Notices: `stalled_topics`), for many intervals at once, in O((events + intervals) log^2 events).

    The group's events in time order (global index `j`); `prev_j` is the previous event of the same
    topic in the same group (-1: none). The distinct topics of `[lo, hi)` are its events with
    `prev_j < lo`, that is `#{j < hi: prev_j < lo} - lo` (every `j < lo` has `prev_j < j < lo`),
    counted with a merge-sort tree: level `k` holds `prev` sorted within blocks of `2^k` events, and
    `[0, hi)` is one block per set bit of `hi`. The notice's own topic is there when its next event
    at or after `lo` comes before `hi`.
    """

    def __init__(self, ev: _Events, codes: np.ndarray) -> None:
        self.scope = _Scope.of(codes)
        order = self.scope.order
        n = len(order)
        self.n = n
        self.group = codes[order].astype(np.int64)
        self.t = ev.t[order]
        pair, _ = pd.factorize(self.group * max(len(ev.topic_names), 1) + ev.topic[order])
        self.pair = pair.astype(np.int64)
        index = np.arange(n, dtype=np.int64)
        self.pair_keys = np.sort(self.pair * (n + 1) + index)  # by (group, topic), then time
        by_pair = np.argsort(self.pair, kind="stable")
        same = np.r_[False, self.pair[by_pair][1:] == self.pair[by_pair][:-1]]
        prev = np.full(n, -1, dtype=np.int64)
        prev[by_pair[same]] = by_pair[np.flatnonzero(same) - 1]
        self.levels = []
        keys = index * (n + 1) + prev + 1  # level 0, blocks of one event: in order already
        k = 0
        while (1 << k) <= n:
            if k:
                # a block of level k is two blocks of level k - 1, each sorted: a stable sort (a
                # merge of runs) puts them together in linear time, where a sort from scratch
                # would cost n log n per level. The blocks of level k - 1 are runs of 2^(k-1)
                # positions, so a key's block is its position's.
                value = keys - (index >> (k - 1)) * (n + 1)
                keys = np.sort((index >> k) * (n + 1) + value, kind="stable")
            self.levels.append(keys)
            k += 1

    def _first_occurrences(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """`#{j < hi: prev_j < lo}` per query."""
        n = self.n
        total = np.zeros(len(lo), dtype=np.int64)
        for k, keys in enumerate(self.levels):
            chosen = np.flatnonzero((hi >> k) & 1)
            if not len(chosen):
                continue
            block = hi[chosen] >> (k + 1) << 1  # the block of 2^k events just below hi's higher bits
            below = np.searchsorted(keys, block * (n + 1) + lo[chosen] + 1, side="left")
            total[chosen] += below - (block << k)
        return total

    def counts(self, positions: np.ndarray, starts: Sequence[int], ends: Sequence[int]) -> np.ndarray:
        """Per query: the distinct topics other than event `positions[q]`'s in its group's events with
        a time in `[starts[q], ends[q])`."""
        m, n = len(positions), self.n
        if not m or not n:
            return np.zeros(m, dtype=np.int64)
        lowest, highest = int(self.t.min()), int(self.t.max()) + 1
        # clipped as Python integers (a bound may be beyond a LONG), then in the times' type
        pairs = np.stack([np.asarray(starts, dtype=object), np.asarray(ends, dtype=object)], axis=1).ravel()
        bounds = np.clip(pairs, lowest, highest).astype(self.t.dtype)
        _, rank = np.unique(np.concatenate([self.t, bounds]), return_inverse=True)
        rank = rank.reshape(-1).astype(np.int64)
        width = n + 2 * m + 1
        keys = self.group * width + rank[:n]  # ascending: by group, then time
        at = self.scope.position_in[positions]
        group = self.group[at]
        lo = np.searchsorted(keys, group * width + rank[n::2], side="left").astype(np.int64)
        hi = np.searchsorted(keys, group * width + rank[n + 1::2], side="left").astype(np.int64)
        hi = np.maximum(hi, lo)
        distinct = self._first_occurrences(lo, hi) - lo
        own = self.pair[at] * (n + 1)
        nxt = np.searchsorted(self.pair_keys, own + lo, side="left")
        found = self.pair_keys[np.minimum(nxt, n - 1)]
        has_own = (nxt < n) & (found < own + hi)
        return np.where(hi > lo, distinct - has_own, 0)


def evaluate_broker(config: NoticeConfig, events: pd.DataFrame) -> pd.DataFrame:
    """The notices of one broker's events (`producer_traffic` columns, any order), as the reference
    engine gives them: `NOTICE_COLUMNS`, in event order and `REASON_ORDER` per event.

    Each topic's limits are resolved once (`limits_of`). `receipt_latency_ms` may be null or
    negative for "no receipt".
    """
    ev = _Events.of(config, events)
    notices: list[tuple[int, int, int, tuple[Any, Any], tuple[Any, Any], str]] = []
    # (position, reason, pause_for_millis, with notices, without notices, scope: connection/thread)
    wait = config.receipt_wait_ms
    receipts = _receipts(ev, wait)
    rate_notices: list[_RateNotice] = []
    if ev.n:
        lim = ev.limits
        topic_bytes, topic_messages = lim["topic_bytes_per_s"], lim["topic_messages_per_s"]
        limited = np.flatnonzero((topic_bytes > 0) | (topic_messages > 0))
        order, starts = _grouped(ev.topic[limited])
        for positions in np.split(limited[order], starts[1:]) if len(limited) else []:
            first = positions[0]
            rate = PublishRate(int(topic_bytes[first]), int(topic_messages[first]))
            rate_notices += _rate_limiter(ev, positions, rate, TOPIC, config.pause_rule)
        group = lim["resource_group"]
        in_group = np.flatnonzero(pd.notna(group))
        if len(in_group):
            codes, _ = pd.factorize(group[in_group])
            order, starts = _grouped(codes.astype(np.int64))
            for positions in np.split(in_group[order], starts[1:]):
                first = positions[0]
                rate = PublishRate(int(lim["group_bytes_per_s"][first]),
                                   int(lim["group_messages_per_s"][first]))
                if rate.limited:
                    rate_notices += _rate_limiter(ev, positions, rate, GROUP, config.pause_rule)
        if config.broker_rate.limited:
            rate_notices += _rate_limiter(ev, np.arange(ev.n), config.broker_rate, BROKER, config.pause_rule)
    for r in rate_notices:
        t, pause = int(ev.t[r.position]), r.pause_ms
        today = (t, t + pause)
        if r.reason == BROKER:
            notices.append((r.position, r.reason, 0, today, today, "connection"))
            continue
        receipt = receipts[r.position]
        with_notices = {IN_TIME: (t, t), LATE: (t + wait, t + pause), UNSUPPORTED: today}[receipt]
        notices.append((r.position, r.reason, pause, with_notices, today, "connection"))
    for i, end in _pending_requests(ev, config.max_pending_requests):
        t = int(ev.t[i])
        notices.append((i, PENDING, 0, (t, end), (t, end), "connection"))
    thread = _threads(ev, config.io_threads) if ev.n else np.zeros(0, dtype=np.int64)
    for i, end in _buffer(ev, thread, config.max_pending_bytes_per_thread):
        t = int(ev.t[i])
        notices.append((i, BUFFER, 0, (t, end), (t, end), "thread"))
    notices.sort(key=lambda x: (x[0], x[1]))
    return _frame(ev, notices, receipts, thread)


def _receipts(ev: _Events, wait: int) -> np.ndarray:
    """`unsupported` without the flag, `in_time` when the receipt comes within the wait, else `late`."""
    in_time = ev.receipt_known & (ev.receipt_ms <= wait)
    return np.where(~ev.supports, UNSUPPORTED, np.where(in_time, IN_TIME, LATE)).astype(object)


def _frame(ev: _Events, notices: list[tuple[int, int, int, tuple[Any, Any], tuple[Any, Any], str]],
           receipts: np.ndarray, thread: np.ndarray) -> pd.DataFrame:
    position = np.array([x[0] for x in notices], dtype=np.int64)
    # each side's intervals (with notices, without) as Python integers: an end may be beyond a LONG
    bounds = [np.array([(int(x[3 + side][0]), int(x[3 + side][1])) for x in notices], dtype=object)
              .reshape(-1, 2) for side in (0, 1)]
    paused = [np.maximum(b[:, 1] - b[:, 0], 0) for b in bounds]
    stalled = [np.zeros(len(notices), dtype=np.int64) for _ in range(2)]
    for scope, codes in (("connection", ev.connection), ("thread", thread)):
        chosen = np.array([q for q, x in enumerate(notices) if x[5] == scope], dtype=np.int64)
        if not len(chosen):
            continue
        stalls = _Stalls(ev, codes)
        for side in (0, 1):
            stalled[side][chosen] = stalls.counts(position[chosen], bounds[side][chosen, 0],
                                                  bounds[side][chosen, 1])
    reasons = np.array([r.name for r in REASON_ORDER], dtype=object)
    columns: dict[str, Any] = {
        "ts_ms": ev.ts[position], "broker": np.full(len(notices), ev.broker, dtype=object),
        "connection_id": ev.connection_names[ev.connection[position]],
        "producer_id": ev.producer_id[position], "topic": ev.topic_names[ev.topic[position]],
        "reason": reasons[np.array([x[1] for x in notices], dtype=np.int64)],
        "pause_for_millis": [x[2] for x in notices], "receipt": receipts[position],
        "connection_paused_ms": paused[0], "stalled_topics": stalled[0],
        "connection_paused_ms_without_notices": paused[1], "stalled_topics_without_notices": stalled[1],
    }
    data = {}
    for f in NOTICE_RECORD.fields:
        values = columns[f.name]
        if f.type == "string":
            data[f.name] = pd.Series(np.asarray(values, dtype=object), dtype=object)
        elif isinstance(values, np.ndarray) and values.dtype == np.int64:
            data[f.name] = pd.Series(values)
        else:
            fits = all(-(2**63) <= v < 2**63 for v in values)
            data[f.name] = pd.Series(np.array(values, dtype=np.int64 if fits else object))
    return pd.DataFrame(data, columns=list(NOTICE_COLUMNS))
