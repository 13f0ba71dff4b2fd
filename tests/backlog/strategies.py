"""Generated backlog telemetry and policies, aimed at the boundaries of every rule."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import strategies as st

from quotaplane.backlog.config import RETENTION_POLICIES, BacklogPolicies, BrokerSettings, Quota, QuotaSet
from quotaplane.backlog.engine.model import Snapshot

TIME_LIMITS = (-1, 0, 1, 5, 60)
SIZE_LIMITS = (-1, 0, 100, 1000)
SIZES = (0, 1, 89, 90, 99, 100, 101, 899, 900, 901, 1000, 1001, 5000)
ENTRIES = (1, 2, 3, 10, 1000, 2**31 + 5)
OFFSETS_MS = (0, 1, 999, 1000, 1001, 4499, 4500, 4501, 4999, 5000, 5001, 53_999, 54_000, 54_001, 59_999,
              60_000, 60_001, 120_000, -1, -1500)
TICK0 = 1_700_000_000_000


def _offset() -> st.SearchStrategy[int]:
    return st.one_of(st.sampled_from(OFFSETS_MS), st.integers(-3_000, 200_000))


@st.composite
def quota(draw: Any, kind: str) -> Quota | None:
    if not draw(st.booleans()):
        return None
    limits = SIZE_LIMITS if kind == "size" else TIME_LIMITS
    return Quota(draw(st.sampled_from(limits)), draw(st.sampled_from(RETENTION_POLICIES)))


@st.composite
def quota_set(draw: Any) -> QuotaSet:
    return QuotaSet(draw(quota("size")), draw(quota("time")))


@st.composite
def scenario(draw: Any, index: int) -> tuple[list[Snapshot], dict[str, QuotaSet], dict[str, QuotaSet]]:
    """One namespace `s<index>/ns`: its topics (some partitioned), ticks, snapshots and quotas."""
    base = f"persistent://s{index}/ns"
    topics: list[tuple[str, str | None]] = []
    for t in range(draw(st.integers(1, 2))):
        if draw(st.booleans()):
            parent = f"{base}/p{t}"
            indexes = draw(st.sets(st.sampled_from([0, 1, 2, 10]), min_size=1, max_size=3))
            topics += [(f"{parent}-partition-{k}", parent) for k in indexes]
        else:
            topics.append((f"{base}/t{t}", None))
    ticks = sorted(draw(st.sets(st.integers(0, 6), min_size=1, max_size=3)))
    rows: list[Snapshot] = []
    for k in ticks:
        ts = TICK0 + k * 30_000
        for topic, parent in topics:
            for sub in sorted(draw(st.sets(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3))):
                if draw(st.integers(0, 4)) == 0:
                    rows.append(Snapshot(ts, topic, sub, draw(st.sampled_from((0, 5))), 0, None,
                                         draw(st.sampled_from((None, ts - 1000))), parent))
                    continue
                publish = ts - draw(_offset())
                closed = _offset().map(lambda o, t=ts: t - o)
                close = draw(st.one_of(st.none(), st.just(0), st.just(publish), closed))
                size = draw(st.one_of(st.sampled_from(SIZES), st.integers(0, 10**7)))
                entries = draw(st.sampled_from(ENTRIES))
                rows.append(Snapshot(ts, topic, sub, size, entries, publish, close, parent))
    namespaces = {f"s{index}/ns": draw(quota_set())} if draw(st.booleans()) else {}
    names = sorted({parent or topic for topic, parent in topics})
    topic_quotas = {name: draw(quota_set()) for name in names if draw(st.booleans())}
    return rows, namespaces, topic_quotas


@st.composite
def fleet(draw: Any, scenarios: int) -> tuple[BacklogPolicies, list[Snapshot]]:
    """Independent scenarios (one namespace each) under one broker configuration."""
    broker = BrokerSettings(
        default_limit_bytes=draw(st.sampled_from(SIZE_LIMITS)),
        default_limit_second=draw(st.sampled_from(TIME_LIMITS)),
        default_retention_policy=draw(st.sampled_from(RETENTION_POLICIES)),
        precise_time_check=draw(st.booleans()))
    rows: list[Snapshot] = []
    namespaces: dict[str, QuotaSet] = {}
    topics: dict[str, QuotaSet] = {}
    for i in range(scenarios):
        r, n, t = draw(scenario(i))
        rows += r
        namespaces.update(n)
        topics.update(t)
    return BacklogPolicies(broker, namespaces, topics), rows


def with_precise(policies: BacklogPolicies, precise: bool) -> BacklogPolicies:
    return replace(policies, broker=replace(policies.broker, precise_time_check=precise))
