"""Generated storage telemetry: many small clusters (one scenario each) in one set of rows.

Each scenario is a cluster named `s<i>` with a few brokers and log dirs and a few collection rounds:
membership changes, brokers missing from a round, failed rounds, duplicate observations,
zero-capacity volumes, and available bytes placed exactly at, just above and just below the
configured thresholds. All scenarios of one example are evaluated in one Spark job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from quotaplane.storage import names as N
from quotaplane.storage.config import StorageConfig, parse_storage_config

REASONS = ["DESCRIBE_CLUSTER_ERROR", "DESCRIBE_LOG_DIR_ERROR", "SAFETY_TIMEOUT"]
TOTALS = [0, 100, 1000, 4000, 10**12 + 7]
# Steps between rounds, around the check interval (60 s) and the validity (2 min) boundaries.
STEPS = [0, 1, 59_999, 60_000, 60_001, 119_999, 120_000, 120_001, 180_000, 300_000]


@dataclass
class Telemetry:
    volumes: list[dict[str, Any]] = field(default_factory=list)
    membership: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)


def _ratio() -> st.SearchStrategy[str]:
    return st.sampled_from(["0.0", "0.1", "0.25", "0.3333333333333333", "0.5", "1.0"])


def _limit_value(kind: str) -> st.SearchStrategy[str]:
    return _ratio() if kind == "availableRatioBelow" else st.sampled_from(["0", "1", "100", "250", "999",
                                                                           "3000"])


@st.composite
def cluster_configs(draw: st.DrawFn) -> StorageConfig:
    kinds = ["availableBytesBelow", "availableRatioBelow", "usedBytesAbove"]
    hard_kind = draw(st.sampled_from(kinds))
    props = {N.VOLUME_SOURCE: "cluster",
             N.per_volume_limit(hard_kind, "hard"): draw(_limit_value(hard_kind)),  # type: ignore[arg-type]
             N.FALLBACK_FACTOR: draw(st.sampled_from(["0.0", "0.25", "1.0"])),
             N.CHECK_INTERVAL: draw(st.sampled_from(["0", "60000"]))}
    if draw(st.booleans()):
        soft_kind = draw(st.sampled_from(kinds))
        props[N.per_volume_limit(soft_kind, "soft")] = draw(_limit_value(soft_kind))  # type: ignore[arg-type]
    produce = draw(st.sampled_from([None, "1000", "0.5"]))
    if produce is not None:
        props[N.PRODUCE] = produce
    return parse_storage_config(props)


@st.composite
def local_configs(draw: st.DrawFn) -> StorageConfig:
    props = {N.VOLUME_SOURCE: "local", N.FALLBACK_FACTOR: draw(st.sampled_from(["0.0", "0.5", "1.0"])),
             N.CHECK_INTERVAL: draw(st.sampled_from(["0", "60000"]))}
    for prop in (N.LEGACY_SOFT, N.LEGACY_HARD):
        value = draw(st.sampled_from([None, "0", "100", "900", "1500", "4000"]))
        if value is not None:
            props[prop] = value
    return parse_storage_config(props)


@st.composite
def strimzi_configs(draw: st.DrawFn) -> StorageConfig:
    props = {N.DIALECT_PROP: "strimzi", N.STRIMZI_BOOTSTRAP: "k:9092",
             N.CHECK_INTERVAL: draw(st.sampled_from(["60", "60", "0"])),
             N.VALIDITY_DURATION: draw(st.sampled_from(["PT2M", "PT2M", "PT1M0.0005S", "PT0S", "PT-1M"])),
             N.FACTOR_FALLBACK: draw(st.sampled_from(["0.0", "0.3", "1.0"]))}
    limit = draw(st.sampled_from(["bytes", "ratio", "ratio", "bytes", None]))
    if limit == "bytes":
        props[N.MIN_AVAILABLE_BYTES] = draw(st.sampled_from(["0", "100", "250"]))
    elif limit == "ratio":
        props[N.MIN_AVAILABLE_RATIO] = draw(_ratio())
    return parse_storage_config(props)


def _thresholds(config: StorageConfig, total: int) -> list[int]:
    """Available byte counts at, just above and just below the configuration's thresholds."""
    points: list[float] = []
    for limit in (config.soft, config.hard):
        if limit is None:
            continue
        if limit.kind == "availableBytesBelow":
            points.append(limit.value)
        elif limit.kind == "availableRatioBelow":
            points.append(limit.value * total)
        else:
            points.append(total - limit.value)
    if config.evaluation == "local":
        points += [total - 100, total - 900]
    out = []
    for p in points:
        out += [int(p) - 1, int(p), int(p) + 1]
    return [a for a in out if 0 <= a <= total]


@st.composite
def telemetry(draw: st.DrawFn, config: StorageConfig, scenarios: int) -> Telemetry:
    """`scenarios` independent small clusters, all rows in one `Telemetry`."""
    out = Telemetry()
    interval = config.check_interval_ms
    for s in range(scenarios):
        cluster = f"s{s}"
        brokers = draw(st.integers(1, 4))
        dirs = {b: draw(st.sampled_from([["/d0"], ["/d0", "/d1"]])) for b in range(1, brokers + 1)}
        totals = {(b, d): draw(st.sampled_from(TOTALS)) for b in dirs for d in dirs[b]}
        ts = draw(st.sampled_from([0, 1_000_000, 1_059_999]))
        for poll in range(draw(st.integers(1, 6))):
            ts += draw(st.sampled_from(STEPS))
            marked = draw(st.booleans())
            poll_id = poll if marked else None
            # unmarked rows stay inside the round's check interval window
            room = (interval - 1 - ts % interval) if interval > 0 and not marked else 0

            def at(ts: int = ts, room: int = room) -> int:
                return ts + (draw(st.integers(0, min(room, 5_000))) if room > 0 else 0)

            if draw(st.integers(0, 3)) > 0:
                listed = draw(st.lists(st.integers(1, brokers + 1), unique=True, max_size=brokers + 1))
                out.membership += [{"ts": at(), "cluster": cluster, "broker_id": b, "poll_id": poll_id}
                                   for b in listed]
            seen = draw(st.lists(st.integers(1, brokers), unique=True, max_size=brokers))
            for b in seen:
                for d in dirs[b]:
                    total = totals[(b, d)]
                    choices = [0, total, *_thresholds(config, total)]
                    for _ in range(draw(st.sampled_from([1, 1, 1, 2]))):  # sometimes twice in a round
                        available = draw(st.sampled_from(choices) | st.integers(0, total))
                        out.volumes.append({"ts": at(), "cluster": cluster, "broker_id": b, "log_dir": d,
                                            "total_bytes": total, "available_bytes": available,
                                            "poll_id": poll_id})
            if draw(st.integers(0, 4)) == 0:
                out.errors.append({"ts": at(), "reason": draw(st.sampled_from(REASONS)), "cluster": cluster,
                                   "poll_id": poll_id})
    return out
