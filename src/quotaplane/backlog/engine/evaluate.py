"""Evaluating every check tick of every topic (spec: Backlog Quota Eviction in the Broker).

Each distinct `ts_ms` is one run of `monitorBacklogQuota`; at a tick each topic with snapshots
is checked on its own, so a tick's result depends only on that tick's snapshots of the topic,
except the eviction counters, which count the eviction runs of the topic so far.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from quotaplane.backlog.config import CONSUMER_BACKLOG_EVICTION, BacklogPolicies
from quotaplane.backlog.engine.checks import (
    PRODUCER_EFFECT,
    action_of,
    age_base_ms,
    age_seconds,
    exceeded_quota,
)
from quotaplane.backlog.engine.eviction import size_eviction, time_evictions
from quotaplane.backlog.engine.model import SIZE, TIME, Eviction, ResolvedQuotas, Snapshot, TickResult
from quotaplane.backlog.engine.oldest import oldest_subscription
from quotaplane.backlog.engine.resolve import resolver
from quotaplane.backlog.names import namespace_of


def evaluate(policies: BacklogPolicies, snapshots: Iterable[Snapshot]) -> list[TickResult]:
    """Every (tick, topic), in time then topic order, with the cumulative eviction counters."""
    groups: dict[tuple[int, str], list[Snapshot]] = defaultdict(list)
    for s in snapshots:
        groups[(s.ts_ms, s.topic)].append(s)
    counters: dict[str, dict[str, int]] = defaultdict(lambda: {SIZE: 0, TIME: 0})
    quotas = resolver(policies)
    results: list[TickResult] = []
    for ts_ms, topic in sorted(groups):
        rows = groups[(ts_ms, topic)]
        results.append(next_tick(policies, ts_ms, topic, rows, counters[topic],
                                 quotas(topic, rows[0].partitioned_topic)))
    return results


def next_tick(policies: BacklogPolicies, ts_ms: int, topic: str, rows: Sequence[Snapshot],
              counts: dict[str, int], quotas: ResolvedQuotas) -> TickResult:
    """The tick `ts_ms` of `topic`, after all its earlier ticks, under `quotas`: `counts` holds the
    topic's eviction runs so far per quota type (`SIZE`, `TIME`), is updated in place with this
    tick's, and gives the result's counters."""
    precise = policies.broker.precise_time_check
    oldest = oldest_subscription(rows)
    size = oldest.backlog_size_bytes if oldest else 0
    base = age_base_ms(oldest.oldest_unacked_publish_ts_ms, oldest.oldest_unacked_ledger_close_ts_ms,
                       precise) if oldest else None
    exceeded = exceeded_quota(ts_ms, size, base, quotas)
    action = action_of(exceeded, quotas)
    evictions: tuple[Eviction, ...] = ()
    if action == CONSUMER_BACKLOG_EVICTION and exceeded is not None:
        evictions = (size_eviction(oldest, quotas.size_limit) if exceeded == SIZE
                     else time_evictions(ts_ms, rows, quotas.time_limit, precise))
        counts[exceeded] += 1
    return TickResult(
        ts_ms=ts_ms,
        topic=topic,
        namespace=namespace_of(topic),
        partitioned_topic=rows[0].partitioned_topic,
        backlog_size_bytes=size,
        backlog_entries=oldest.backlog_entries if oldest else 0,
        backlog_age_seconds=age_seconds(ts_ms, base),
        oldest_subscription=oldest.subscription if oldest else None,
        quotas=quotas,
        exceeded=exceeded,
        action=action,
        producers=PRODUCER_EFFECT.get(action) if action else None,
        evictions=evictions,
        size_evictions_total=counts[SIZE],
        time_evictions_total=counts[TIME],
    )
