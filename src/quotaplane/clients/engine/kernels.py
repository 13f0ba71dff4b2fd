"""The Spark engine's per-group arithmetic: one sharing group's requests, in time order, as numpy.

spec: Kafka `SampledStat`/`Rate`, `QuotaUtils`, `TokenBucket`; the same
rules as `quotaplane.clients.engine`, formulated over whole arrays.

Sampled rates without a Python loop. Which sample a record lands in, and which samples a
measurement still counts, depend only on the timestamps:

- Samples. A record starts a new sample when `t - start >= window`, so sample starts form a chain
  over the sorted times: from an event at `t`, the next start is the first event at or after
  `t + window` (`searchsorted`). The chain from the first event is marked by pointer doubling
  (log2(samples) rounds of `jump = jump[jump]`).
- Purges. A measurement follows every record at the same time, so the current sample is never
  purged, and a purged slot never starts before the oldest live sample (the sample its purge time
  fell in is still live when it would). So at event i in sample k the window counts samples k-S..k
  (the ring holds S+1) that have an event after `t_i - S*window`: from the first such sample k0 on.
- Sums are prefix sums of whole units (exact), `window = t_i - start(k0)` padded to S-1 whole
  windows, at least 1 ms.

Fetch: a throttled fetch is recorded back out, so later sums depend on earlier decisions. The
vectorised pass is exact up to a group's first throttled fetch; from there a loop over the rest of
that group carries the running sum (each step needs the previous decisions; the windows and sample
bounds are precomputed, so a step is a few integer and float operations). Groups that never
throttle never enter it.

Several sharing groups can be evaluated in one pass by laying them end to end on one timeline with
gaps longer than any window and purge age (only time differences matter to a sampled rate).

Controller mutations: the token bucket is a recurrence with a clamp (`min(burst, ...)`) and, in
strict mode, a record that happens only if the tokens are not negative, evaluated in doubles in
Kafka's order of operations; a closed form (running minimum of prefix sums) would round
differently, so a loop over the group's requests reproduces Kafka's arithmetic exactly. Controller
mutations are rare (topic creations and deletions), so these groups are small.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from quotaplane.core.javamath import long_to_int, math_round

NANOS_TO_PERCENTAGE_PER_SECOND = 100.0 / 1_000_000_000


def segment_starts(t: np.ndarray, window_ms: int) -> np.ndarray:
    """Indices of the events that start a new sample (the first event always does)."""
    n = t.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    jump = np.empty(n + 1, dtype=np.int64)
    jump[:n] = np.searchsorted(t, t + window_ms, side="left")
    jump[n] = n
    reached = np.zeros(n + 1, dtype=bool)  # the chain from event 0, marked (n: past the end)
    reached[0] = True
    while jump[0] != n:
        reached[jump[reached]] = True
        jump = jump[jump]
    return np.flatnonzero(reached[:n])


@dataclass(frozen=True)
class RateWindows:
    """Per event: the index of the first event the measurement counts, and the window in ms."""

    first_counted: np.ndarray
    window_ms: np.ndarray


def rate_windows(t: np.ndarray, samples: int, window_ms: int) -> RateWindows:
    """The sample structure of a group with a measurement after every record (see module doc)."""
    n = t.size
    starts = segment_starts(t, window_ms)
    is_start = np.zeros(n, dtype=bool)
    is_start[starts] = True
    segment = np.cumsum(is_start) - 1
    last_index = np.empty(starts.size, dtype=np.int64)
    last_index[:-1] = starts[1:] - 1
    last_index[-1] = n - 1
    last_t = t[last_index]
    first_live = np.searchsorted(last_t, t - samples * window_ms, side="right")
    oldest = np.maximum(segment - samples, first_live)
    first_counted = starts[oldest]
    elapsed = t - t[first_counted]
    full = elapsed // window_ms
    elapsed = elapsed + np.maximum(samples - 1 - full, 0) * window_ms
    return RateWindows(first_counted, np.maximum(elapsed, 1))


def to_rate(total_units: np.ndarray, window_ms: np.ndarray, scale: float) -> np.ndarray:
    summed = total_units.astype(np.float64)
    if scale != 1.0:
        summed = summed * scale
    return summed / (window_ms.astype(np.float64) / 1000.0)


def rate_throttle(rate: np.ndarray, limit: np.ndarray, window_ms: np.ndarray,
                  cap_ms: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(violated, throttle ms) of `QuotaUtils.throttleTime`, capped for the request quota, as the
    int the quota manager returns; a throttle that is not positive is none. `limit` NaN: unlimited."""
    violated = ~np.isnan(limit) & (rate > limit)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        raw = math_round.array((rate - limit) / limit * window_ms.astype(np.float64))
    if cap_ms is not None:
        raw = np.minimum(raw, cap_ms)
    throttle = np.where(violated, np.maximum(long_to_int.array(raw), 0), 0)
    return violated, throttle


@dataclass(frozen=True)
class GroupResult:
    rate: np.ndarray
    window_ms: np.ndarray
    tokens: np.ndarray
    violated: np.ndarray
    throttle_ms: np.ndarray


def sampled_group(t: np.ndarray, units: np.ndarray, limit: np.ndarray, samples: int, window_ms: int,
                  scale: float = 1.0, cap_ms: int | None = None, unrecord: bool = False,
                  group_starts: np.ndarray | None = None) -> GroupResult:
    """Produce (`limit` per request), request (`scale`, `cap_ms`) and fetch (`unrecord`) requests of
    one sharing group, or of several laid end to end on one timeline (`group_starts`: the index of
    each group's first request; only fetch needs them)."""
    n = t.size
    windows = rate_windows(t, samples, window_ms)
    prefix = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(units, out=prefix[1:])
    total = prefix[1:] - prefix[windows.first_counted]
    rate = to_rate(total, windows.window_ms, scale)
    violated, throttle = rate_throttle(rate, limit, windows.window_ms, cap_ms)
    if unrecord:
        throttled = np.flatnonzero(throttle > 0)
        if throttled.size:
            starts = np.zeros(1, dtype=np.int64) if group_starts is None else group_starts
            ends = np.append(starts[1:], n)
            group = np.searchsorted(starts, throttled, side="right") - 1
            first = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
            spans = [(int(starts[g]), int(throttled[f]), int(ends[g])) for g, f in zip(group[first], first,
                                                                                         strict=True)]
            _unrecord(spans, units, limit, windows, prefix, rate, violated, throttle)
    return GroupResult(rate, windows.window_ms, np.full(n, np.nan), violated, throttle)


def _unrecord(spans: list[tuple[int, int, int]], units: np.ndarray, limit: np.ndarray,
              windows: RateWindows, prefix: np.ndarray, rate: np.ndarray, violated: np.ndarray,
              throttle: np.ndarray) -> None:
    """Fetch: in each (group start, first throttled, group end) span, from the first throttled
    request on, throttled bytes leave the running sum. Requests before it, and groups never
    throttled, keep the vectorised result (nothing was recorded out before them)."""
    units_l = units.tolist()
    first_l = windows.first_counted.tolist()
    window_l = windows.window_ms.tolist()
    limit_l = limit.tolist()
    rates = rate.tolist()
    viol = violated.tolist()
    thr = throttle.tolist()
    inf = float("inf")
    for group_start, start, end in spans:
        # kept[j - group_start]: bytes still recorded among the group's requests before j
        kept = (prefix[group_start: start + 1] - prefix[group_start]).tolist()
        for i in range(start, end):
            value = units_l[i]
            window = window_l[i]
            r = float(kept[i - group_start] - kept[first_l[i] - group_start] + value) / (window / 1000.0)
            bound = limit_l[i]
            t_ms = 0
            v = bound == bound and r > bound
            if v:
                diff = r - bound
                x = (diff / bound if bound != 0.0 else inf) * float(window)
                t_ms = max(long_to_int(math_round(x)), 0)
            rates[i] = r
            viol[i] = v
            thr[i] = t_ms
            kept.append(kept[i - group_start] + (0 if t_ms > 0 else value))
    rate[:] = rates
    violated[:] = viol
    throttle[:] = thr


def mutation_group(t: np.ndarray, units: np.ndarray, limit: float, strict: bool, bucket_samples: int,
                   bucket_window_ms: int, rate_samples: int, rate_window_ms: int) -> GroupResult:
    """A controller mutation group: token bucket (`limit` NaN: unlimited, no bucket) and the
    `mutation-rate` sampled rate, measured after each request."""
    n = t.size
    t_l = t.tolist()
    u_l = units.tolist()
    rates = [0.0] * n
    windows = [0] * n
    tokens_out = [float("nan")] * n
    viol = [False] * n
    thr = [0] * n
    limited = limit == limit
    burst = bucket_samples * (bucket_window_ms / 1000.0) * limit if limited else 0.0
    tokens = 0.0
    last_update = 0
    starts: list[int] = []
    lasts: list[int] = []
    values: list[int] = []
    current = 0
    slots = rate_samples + 1
    expire = rate_samples * rate_window_ms
    for i in range(n):
        ti = t_l[i]
        value = u_l[i]
        record = True
        if limited and strict:
            tokens = min(burst, tokens + limit * ((ti - last_update) / 1000.0))
            last_update = ti
            record = not tokens < 0
        if record:
            if not starts:
                starts.append(ti)
                lasts.append(ti)
                values.append(0)
            if ti - starts[current] >= rate_window_ms:
                current = (current + 1) % slots
                if current >= len(starts):
                    starts.append(ti)
                    lasts.append(ti)
                    values.append(0)
                else:
                    starts[current] = ti
                    lasts[current] = ti
                    values[current] = 0
            values[current] += value
            lasts[current] = ti
            if limited:
                tokens = min(burst, tokens + limit * ((ti - last_update) / 1000.0))
                last_update = ti
                tokens = min(burst, tokens - float(value))
                if not strict:
                    tokens = min(burst, tokens + limit * ((ti - last_update) / 1000.0))
        if limited:
            violated = not record if strict else tokens < 0
            viol[i] = violated
            tokens_out[i] = tokens
            if violated:
                x = ((-tokens) / limit if limit != 0.0 else float("inf")) * 1000.0
                thr[i] = max(long_to_int(math_round(x)), 0)
        for j in range(len(starts)):
            if ti - lasts[j] >= expire:
                starts[j] = ti
                lasts[j] = ti
                values[j] = 0
        if not starts:
            starts.append(ti)
            lasts.append(ti)
            values.append(0)
        elapsed = ti - min(starts)
        full = elapsed // rate_window_ms
        if full < rate_samples - 1:
            elapsed += (rate_samples - 1 - full) * rate_window_ms
        window = max(elapsed, 1)
        rates[i] = float(sum(values)) / (window / 1000.0)
        windows[i] = window
    return GroupResult(np.array(rates, dtype=np.float64), np.array(windows, dtype=np.int64),
                       np.array(tokens_out, dtype=np.float64), np.array(viol, dtype=bool),
                       np.array(thr, dtype=np.int64))


def utilisation(rate: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """rate / limit x 100; NaN when unlimited or the limit is 0."""
    usable = ~np.isnan(limit) & (limit != 0.0)
    out = np.full(rate.shape, np.nan)
    out[usable] = rate[usable] / limit[usable] * 100.0
    return out


def factor_in_force(times: np.ndarray, factors: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The factor of the last decision at or before each t (`times` in decision order), else 1.0."""
    if times.size == 0:
        return np.ones(t.shape)
    index = np.searchsorted(times, t, side="right") - 1
    return np.where(index >= 0, factors[np.maximum(index, 0)], 1.0)
