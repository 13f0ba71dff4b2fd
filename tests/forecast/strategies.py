"""Generated forecast telemetry: volumes with their replicas' sizes, and backlog checks.

Sizes walk up and down (writes, and segment-sized drops as retention deletes), times repeat and
fall on the window's edges, leaders are marked or not, some replicas leave before the last round.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from quotaplane.forecast.engine.backlog import BacklogTick
from quotaplane.forecast.engine.replicas import ReplicaPoint
from quotaplane.forecast.engine.volumes import VolumePoint
from quotaplane.storage.config import parse_storage_config

P = "client.quota.callback.static."
CONFIGS = {
    "ratio": {P + "storage.volume.source": "cluster",
              P + "storage.perVolumeLimit.availableRatioBelow.soft": "0.5",
              P + "storage.perVolumeLimit.availableRatioBelow.hard": "0.25"},
    "bytes": {P + "storage.volume.source": "cluster",
              P + "storage.perVolumeLimit.availableBytesBelow.soft": "600",
              P + "storage.perVolumeLimit.availableBytesBelow.hard": "300"},
    "used": {P + "storage.volume.source": "cluster",
             P + "storage.perVolumeLimit.usedBytesAbove.hard": "700"},
}
STEP_MS = 60_000


def storage_config(name: str | None) -> Any:
    return None if name is None else parse_storage_config(CONFIGS[name])


@st.composite
def volume_history(draw: st.DrawFn, cluster: str, broker: int, log_dir: str, rounds: int,
                   with_partitions: bool) -> tuple[list[VolumePoint], list[ReplicaPoint]]:
    total = draw(st.integers(0, 1200))
    base = draw(st.integers(0, 100))
    topics = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3, unique=True))
    replicas = [(t, p) for t in topics for p in range(draw(st.integers(1, 2)))]
    sizes = {r: draw(st.integers(0, 200)) for r in replicas}
    leader = {r: draw(st.sampled_from([True, False, None])) for r in replicas}
    leaves = {r: draw(st.integers(0, rounds + 1)) for r in replicas}
    volumes: list[VolumePoint] = []
    points: list[ReplicaPoint] = []
    for i in range(rounds):
        ts = i * STEP_MS + draw(st.sampled_from([0, 0, 1, -1]))
        for r in replicas:
            sizes[r] = max(0, sizes[r] + draw(st.sampled_from([0, 5, 10, 30, -60, -100])))
        used = base + sum(s for r, s in sizes.items() if leaves[r] > i)
        available = max(0, total - used)
        volumes.append(VolumePoint(ts, cluster, broker, log_dir, total, available))
        if draw(st.booleans()):  # a repeated observation at the same time
            volumes.append(VolumePoint(ts, cluster, broker, log_dir, total, min(total, available + 7)))
        if (with_partitions and i % 2 == 0) or (with_partitions and draw(st.booleans())):
            for r in replicas:
                if leaves[r] > i:
                    points.append(ReplicaPoint(ts, cluster, broker, log_dir, r[0], r[1], sizes[r], leader[r]))
    return volumes, points


@st.composite
def fleet(draw: st.DrawFn) -> tuple[list[VolumePoint], list[ReplicaPoint], str | None, int, int | None]:
    """(volumes, replica sizes, config name, window ms, at ms or None)."""
    volumes: list[VolumePoint] = []
    replicas: list[ReplicaPoint] = []
    rounds = draw(st.integers(1, 12))
    for n in range(draw(st.integers(1, 4))):
        vs, rs = draw(volume_history("c1" if n % 2 == 0 else "c2", n // 2, f"/d{n % 2}", rounds,
                                     draw(st.booleans())))
        volumes += vs
        replicas += rs
    window = draw(st.sampled_from([STEP_MS, 3 * STEP_MS, 5 * STEP_MS, 60 * STEP_MS]))
    at = draw(st.one_of(st.none(), st.integers(0, rounds).map(lambda r: r * STEP_MS)))
    return volumes, replicas, draw(st.sampled_from([None, "ratio", "bytes", "used"])), window, at


@st.composite
def backlog_ticks(draw: st.DrawFn) -> tuple[list[BacklogTick], int]:
    ticks: list[BacklogTick] = []
    for n in range(draw(st.integers(1, 4))):
        topic = f"persistent://t/ns/topic-{n}"
        size_limit = draw(st.sampled_from([-1, 0, 500, 2000]))
        time_limit = draw(st.sampled_from([-1, 0, 60, 600]))
        size, age = draw(st.integers(0, 1000)), draw(st.one_of(st.none(), st.integers(0, 300)))
        for i in range(draw(st.integers(1, 10))):
            size = max(0, size + draw(st.integers(-100, 300)))
            step = draw(st.sampled_from([0, 30, 60]))
            age = None if age is None and draw(st.booleans()) else (age or 0) + step
            ticks.append(BacklogTick(i * STEP_MS, topic, "t/ns", size, age, size_limit, time_limit))
    return ticks, draw(st.sampled_from([STEP_MS, 4 * STEP_MS, 60 * STEP_MS]))
