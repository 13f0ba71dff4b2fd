"""What a `consumer_backlog_eviction` run would evict (Pulsar `BacklogQuotaManager`).

- Size: the target is `(long)(0.9 * limitSize)`; while the backlog is above it, the slowest
  cursor (the subscription holding the topic backlog) skips
  `(int)((backlog - target) * (double)entries / backlog)` entries. One skip is reported: the
  subscription, those entries, and `backlog - target` bytes (what the skip aims to remove).
  Nothing is reported when no entry would be skipped.
- Time, precise mode: every subscription's expiry monitor expires the messages published before
  `tick - (int)(0.9 * limitTime) * 1000` (current `PersistentMessageExpiryMonitor`); estimate
  mode (`dropBacklogForTimeLimit`'s loop): the slowest cursor drops whole ledgers closed more than
  `limitTime` seconds ago, then the slowest cursor is picked again, until the slowest cursor sits
  in a ledger that is open or not that old. So the subscriptions moved are the slowest ones, in
  order (`oldest.oldest_key`), as long as each one's oldest unacknowledged message is in a closed
  ledger with `tick - close > limitTime * 1000` (cutoff `tick - limitTime * 1000`). A snapshot knows
  only a subscription's oldest message, so the entries and bytes are estimated assuming its backlog
  was published evenly between that message and the tick: the fraction
  `(cutoff - oldest) / (tick - oldest)` of them.
"""

from __future__ import annotations

from collections.abc import Iterable

from quotaplane.backlog.engine.model import Eviction, Snapshot
from quotaplane.backlog.engine.oldest import oldest_key
from quotaplane.core.javamath import double_to_int, double_to_long

REDUCTION_FACTOR = 0.9


def eviction_target(limit: int) -> int:
    """`computeEvictionTarget`: `(long)(0.9 * limit)`."""
    return double_to_long(REDUCTION_FACTOR * float(limit))


def entries_to_skip(backlog_size_bytes: int, size_limit: int, entries: int) -> int:
    """`computeEntriesToEvict`, or 0 when the backlog is not above the target."""
    target = eviction_target(size_limit)
    if backlog_size_bytes <= target:
        return 0
    return double_to_int(float(backlog_size_bytes - target) * float(entries) / float(backlog_size_bytes))


def size_eviction(oldest: Snapshot | None, size_limit: int) -> tuple[Eviction, ...]:
    """The first skip of `dropBacklogForSizeLimit` on the slowest cursor."""
    if oldest is None:
        return ()
    skip = entries_to_skip(oldest.backlog_size_bytes, size_limit, oldest.backlog_entries)
    if skip <= 0:
        return ()
    return (Eviction(oldest.subscription, skip,
                     oldest.backlog_size_bytes - eviction_target(size_limit)),)


def older_than(tick_ms: int, snapshot: Snapshot, cutoff_ms: int) -> Eviction:
    """The estimated part of a subscription's backlog published before `cutoff_ms`."""
    oldest = snapshot.oldest_unacked_publish_ts_ms
    assert oldest is not None
    if cutoff_ms <= oldest:
        return Eviction(snapshot.subscription, 0, 0)
    fraction = float(cutoff_ms - oldest) / float(tick_ms - oldest)
    return Eviction(snapshot.subscription, double_to_int(fraction * float(snapshot.backlog_entries)),
                    double_to_long(fraction * float(snapshot.backlog_size_bytes)))


def time_evictions(tick_ms: int, rows: Iterable[Snapshot], time_limit: int, precise: bool
                   ) -> tuple[Eviction, ...]:
    """`dropBacklogForTimeLimit`: precise, every subscription whose oldest message is older
    than the target (`isEntryExpired`: `tick > publish + target * 1000`); estimate, the slowest
    cursors while each sits in an expired closed ledger (module docstring). Sorted by
    subscription."""
    if precise:
        target_ms = eviction_target(time_limit) * 1000
        cutoff = tick_ms - target_ms
        hit = [s for s in rows if s.oldest_unacked_publish_ts_ms is not None
               and tick_ms > s.oldest_unacked_publish_ts_ms + target_ms]
        return tuple(older_than(tick_ms, s, cutoff) for s in sorted(hit, key=lambda s: s.subscription))
    cutoff = tick_ms - time_limit * 1000
    moved = []
    for s in sorted((s for s in rows if s.oldest_unacked_publish_ts_ms is not None), key=oldest_key):
        close = s.oldest_unacked_ledger_close_ts_ms
        if close is None or close <= 0 or not tick_ms - close > time_limit * 1000:
            break
        moved.append(older_than(tick_ms, s, cutoff))
    return tuple(sorted(moved, key=lambda e: e.subscription))
