"""The backlog-quota check of one topic at one tick: age, size check, time check.

spec: Backlog Quota Eviction in the Broker; Pulsar `BrokerService.monitorBacklogQuota`, `PersistentTopic`:
- size is checked first: exceeded iff the limit is >= 0 and `backlog size >= limit`;
- only when size is not exceeded, time: exceeded iff the limit is > 0, an oldest-message time is
  known and `tick_ms > that time + limit * 1000` (strictly, in milliseconds);
- precise mode takes the oldest unacknowledged message's publish time, estimate mode the close
  time of the ledger holding it (none while that ledger is open: close time null or <= 0).
"""

from __future__ import annotations

from quotaplane.backlog.engine.model import SIZE, TIME, ResolvedQuotas


def age_base_ms(publish_ts_ms: int | None, ledger_close_ts_ms: int | None, precise: bool) -> int | None:
    """The time the backlog age is measured from (spec: preciseTimeBasedBacklogQuotaCheck)."""
    if precise:
        return publish_ts_ms
    if publish_ts_ms is None or ledger_close_ts_ms is None or ledger_close_ts_ms <= 0:
        return None
    return ledger_close_ts_ms


def age_seconds(tick_ms: int, base_ms: int | None) -> int | None:
    """Whole seconds from `base_ms` to the tick, truncated toward zero (Java
    `TimeUnit.MILLISECONDS.toSeconds`); None when the base is unknown."""
    if base_ms is None:
        return None
    elapsed = tick_ms - base_ms
    whole = abs(elapsed) // 1000
    return whole if elapsed >= 0 else -whole


def size_exceeded(backlog_size_bytes: int, size_limit: int) -> bool:
    """`PersistentTopic.isSizeBacklogExceeded`: a negative limit is no limit; `>=` the limit."""
    return size_limit >= 0 and backlog_size_bytes >= size_limit


def time_exceeded(tick_ms: int, base_ms: int | None, time_limit: int) -> bool:
    """`checkTimeBacklogExceeded`: a limit <= 0 is no limit; strictly older than the limit."""
    return time_limit > 0 and base_ms is not None and tick_ms > base_ms + time_limit * 1000


def exceeded_quota(tick_ms: int, backlog_size_bytes: int, base_ms: int | None,
                   quotas: ResolvedQuotas) -> str | None:
    """`size`, `time` or None; time is checked only when size is not exceeded."""
    if size_exceeded(backlog_size_bytes, quotas.size_limit):
        return SIZE
    if time_exceeded(tick_ms, base_ms, quotas.time_limit):
        return TIME
    return None


PRODUCER_EFFECT = {"producer_request_hold": "held", "producer_exception": "failed"}


def action_of(exceeded: str | None, quotas: ResolvedQuotas) -> str | None:
    """The retention policy in force for the exceeded quota, or None."""
    if exceeded is None:
        return None
    return quotas.size_policy if exceeded == SIZE else quotas.time_policy
