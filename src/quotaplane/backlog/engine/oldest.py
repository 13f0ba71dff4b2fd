"""The topic backlog: the backlog of the subscription holding the oldest unacknowledged message.

spec: Background knowledge / Backlog ("A topic backlog is defined as the backlog of the
subscription which has the oldest unacknowledged message"). Ties (equal publish times) go to
the larger backlog, then to the smaller subscription name. A subscription without an
unacknowledged message (`oldest_unacked_publish_ts_ms` null) never holds the topic backlog.
"""

from __future__ import annotations

from collections.abc import Iterable

from quotaplane.backlog.engine.model import Snapshot


def oldest_key(s: Snapshot) -> tuple[int, int, str]:
    """Sort key: oldest publish time first, then larger backlog, then subscription name."""
    assert s.oldest_unacked_publish_ts_ms is not None
    return (s.oldest_unacked_publish_ts_ms, -s.backlog_size_bytes, s.subscription)


def oldest_subscription(rows: Iterable[Snapshot]) -> Snapshot | None:
    """The snapshot holding the topic backlog, or None when no subscription has a backlog."""
    candidates = [s for s in rows if s.oldest_unacked_publish_ts_ms is not None]
    return min(candidates, key=oldest_key) if candidates else None
