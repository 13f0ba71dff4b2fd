"""Backlog snapshots: every (topic partition, subscription) at every backlog-quota check tick.

A partition publishes at a smooth daily rate, so the bytes published up to time t, P(t), is a
closed form (the integral of `rate x (1 + a cos(...))`). A subscription acknowledges up to its
consumer's capacity each tick: a healthy consumer keeps up, a slow one acknowledges a fraction of
the publish rate, a stalling one stops for a while and then catches up. The backlog follows
`B = max(0, B_prev + published - capacity)` (computed for a whole chunk at once in its closed
form), or just the messages in flight when it keeps up. The oldest unacknowledged message is the one at byte
position `P(t) - backlog`, so its publish time solves `P(T) = P(t) - backlog` (bisection). Ledgers
roll on Pulsar's rules (50,000 entries or 240 minutes, at least 10 minutes): the ledger holding
that message is closed at its roll time, or still open (null close time).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from quotaplane.sim.kinds import strings, table
from quotaplane.sim.model import DAY_MS, HOUR_MS, MINUTE_MS, ClusterModel
from quotaplane.sim.rng import Fields

MAX_ENTRIES_PER_LEDGER = 50_000  # managedLedgerMaxEntriesPerLedger
MIN_LEDGER_MS = 10 * MINUTE_MS  # managedLedgerMinLedgerRolloverTimeMinutes
MAX_LEDGER_MS = 240 * MINUTE_MS  # managedLedgerMaxLedgerRolloverTimeMinutes
MODES = ("healthy", "slow", "stalls")


class BacklogGenerator:
    """Chunks of `backlog_snapshots`, tick by tick over the window."""

    def __init__(self, model: ClusterModel, fields: Fields, chunk_rows: int = 500_000) -> None:
        self.model = model
        self.fields = fields
        names, parents, rate, amp, peak, entry = [], [], [], [], [], []
        cursor_part, cursor_sub, subs = [], [], []
        for ti, topic in enumerate(model.pulsar):
            count = max(1, topic.partitions)
            weight = fields.lognormal_mean_one("partition-skew", 0.25, ti, np.arange(count))
            weight = weight / weight.sum()
            first_sub = len(subs)
            subs.extend(topic.subscriptions)
            for p in range(count):
                names.append(f"{topic.name}-partition-{p}" if topic.partitions else topic.name)
                parents.append(topic.name if topic.partitions else None)
                rate.append(topic.rate * weight[p])
                amp.append(topic.diurnal_amplitude)
                peak.append(topic.peak_hour)
                entry.append(topic.entry_bytes)
                for s in range(len(topic.subscriptions)):
                    cursor_part.append(len(names) - 1)
                    cursor_sub.append(first_sub + s)
        self.names = names
        self.parents = [p or "" for p in parents]
        self.has_parent = np.array([p is not None for p in parents], dtype=bool)
        self.rate = np.array(rate, dtype=np.float64)
        self.amp = np.array(amp, dtype=np.float64)
        self.peak = np.array(peak, dtype=np.float64)
        self.entry = np.array(entry, dtype=np.int64)
        self.ledger_ms = np.clip(MAX_ENTRIES_PER_LEDGER * self.entry / np.maximum(self.rate, 1e-9) * 1000,
                                 MIN_LEDGER_MS, MAX_LEDGER_MS).astype(np.int64)
        self.ledger_phase = model.start_ms + np.floor(
            fields.uniform("ledger-phase", np.arange(len(names))) * self.ledger_ms).astype(np.int64)
        self.subs = subs
        self.cursor_part = np.array(cursor_part, dtype=np.int64)
        self.cursor_sub = np.array(cursor_sub, dtype=np.int64)
        self.mode = np.array([MODES.index(s.mode) for s in subs], dtype=np.int64)[self.cursor_sub] \
            if subs else np.zeros(0, dtype=np.int64)
        self.chunk_ticks = max(1, chunk_rows // max(1, len(self.cursor_part)))

    def published(self, part: np.ndarray, ts_ms: np.ndarray) -> np.ndarray:
        """P(t): bytes published to each partition from the model start up to `ts_ms` (float)."""
        seconds = (ts_ms - self.model.start_ms) / 1000.0
        hours = (ts_ms % DAY_MS) / HOUR_MS
        phase = 2.0 * np.pi * (hours - self.peak[part]) / 24.0
        swing = self.amp[part] * 86_400.0 / (2.0 * np.pi) * np.sin(phase)
        return self.rate[part] * (seconds + swing)

    def chunks(self) -> Iterator[dict[str, pa.Table]]:
        m = self.model
        if not len(self.cursor_part):
            return
        check = m.backlog_check_ms
        first = -(-(m.window_start_ms - m.start_ms) // check)
        end = -(-(m.window_end_ms - m.start_ms) // check)
        backlog = np.array([self.subs[s].initial_backlog_bytes for s in self.cursor_sub], dtype=np.int64)
        for j0 in range(first, end, self.chunk_ticks):
            ticks = np.arange(j0, min(end, j0 + self.chunk_ticks), dtype=np.int64)
            table_, backlog = self._chunk(ticks, backlog)
            yield {"backlog_snapshots": table_}

    def _capacity(self, ticks: np.ndarray, ts: np.ndarray, published: np.ndarray) -> np.ndarray:
        """(n, cursors): bytes each subscription can acknowledge per tick (-1: keeps up)."""
        f, subs = self.fields, self.subs
        cursors = np.arange(len(self.cursor_part))
        slow = np.array([subs[s].slow_fraction for s in self.cursor_sub])
        catchup = np.array([subs[s].catchup for s in self.cursor_sub])
        stall_p = np.array([subs[s].stall_probability for s in self.cursor_sub])
        stalled = np.zeros(published.shape, dtype=bool)
        hour = (ts - self.model.start_ms) // HOUR_MS
        for h in (hour - 1, hour):  # a stall may run over into the next hour
            key = (h[:, None], self.cursor_sub[None, :])
            at = self.model.start_ms + h[:, None] * HOUR_MS + np.floor(f.uniform("stall-at", *key) * HOUR_MS)
            length = (10 + np.floor(f.uniform("stall-len", *key) * 31)) * MINUTE_MS
            stalled |= (f.uniform("stall", *key) < stall_p[None, :]) & (ts[:, None] >= at) \
                & (ts[:, None] < at + length)
        for ci in cursors:
            for start, stop in subs[self.cursor_sub[ci]].stall_windows:
                stalled[:, ci] |= (ts >= start) & (ts < stop)
        capacity = np.where(self.mode == MODES.index("slow"), np.floor(slow * published),
                            np.floor(catchup * published))
        capacity = np.where(stalled & (self.mode == MODES.index("stalls")), 0.0, capacity)
        return np.where(self.mode == MODES.index("healthy"), -1.0, capacity).astype(np.int64)

    def _chunk(self, ticks: np.ndarray, carried: np.ndarray) -> tuple[pa.Table, np.ndarray]:
        m, f = self.model, self.fields
        check = m.backlog_check_ms
        ts = m.start_ms + ticks * check
        part = self.cursor_part
        now = np.floor(self.published(part[None, :], ts[:, None])).astype(np.int64)
        before = np.floor(self.published(part[None, :], (ts - check)[:, None])).astype(np.int64)
        published = now - before
        capacity = self._capacity(ticks, ts, published)
        # Lindley's recursion B_j = max(0, B_{j-1} + x_j) in closed form:
        # B_j = S_j - min(-B_0, min_{i<=j} S_i) with S the running sum of x.
        steps = np.where(capacity < 0, 0, published - capacity)
        running = np.cumsum(steps, axis=0)
        behind = running - np.minimum(-carried[None, :], np.minimum.accumulate(running, axis=0))
        behind = np.where(capacity < 0, 0, behind)
        cursors = np.arange(len(part))[None, :]
        key = (ticks[:, None], cursors)
        lag_ms = 200 + np.floor(f.uniform("ack-lag", *key) * 3000).astype(np.int64)
        in_flight = now - np.floor(self.published(part[None, :], ts[:, None] - lag_ms)).astype(np.int64)
        in_flight = np.where(f.uniform("caught-up", *key) < 0.3, 0, in_flight)
        # Unacknowledged = from the ack position to the head: a consumer that keeps up has only
        # its in-flight messages out; one that is behind has its whole backlog (in-flight included).
        size = np.maximum(behind, in_flight)
        oldest = self._oldest(part, ts, now - size, size)
        entries = -(-size // self.entry[part][None, :])
        ledger = self.ledger_ms[part][None, :]
        phase = self.ledger_phase[part][None, :]
        close = phase + ((oldest - phase) // ledger + 1) * ledger
        has_backlog = size > 0
        closed = has_backlog & (close <= ts[:, None])
        n_ticks, n_cur = size.shape
        ti = np.repeat(np.arange(n_ticks), n_cur)
        ci = np.tile(np.arange(n_cur), n_ticks)
        parent = self.has_parent[part[ci]]
        rows = table("backlog_snapshots", {
            "ts_ms": pa.array(ts[ti]),
            "topic": strings(self.names, part[ci]),
            "subscription": strings([s.name for s in self.subs], self.cursor_sub[ci]),
            "backlog_size_bytes": pa.array(size.ravel()),
            "backlog_entries": pa.array(entries.ravel()),
            "oldest_unacked_publish_ts_ms": pa.array(oldest.ravel(), mask=~has_backlog.ravel()),
            "oldest_unacked_ledger_close_ts_ms": pa.array(close.ravel(), mask=~closed.ravel()),
            "partitioned_topic": pc.if_else(pa.array(parent), strings(self.parents, part[ci]),
                                            pa.scalar(None, pa.string())),
        })
        return rows, behind[-1]

    def _oldest(self, part: np.ndarray, ts: np.ndarray, position: np.ndarray, size: np.ndarray) -> np.ndarray:
        """(n, cursors): the publish time (ms) of the message at byte `position`: P(T) = position."""
        rate = self.rate[part][None, :]
        low_rate = rate * (1.0 - self.amp[part][None, :])
        hi = np.broadcast_to(ts[:, None], size.shape).astype(np.float64)
        lo = hi - size / np.maximum(low_rate, 1e-9) * 1000.0 - 1000.0
        pp = np.broadcast_to(part[None, :], size.shape)
        for _ in range(48):
            mid = 0.5 * (lo + hi)
            above = self.published(pp, mid) > position
            hi = np.where(above, mid, hi)
            lo = np.where(above, lo, mid)
        return np.minimum(np.floor(hi).astype(np.int64), ts[:, None])
