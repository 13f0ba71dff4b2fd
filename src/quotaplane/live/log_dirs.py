"""DescribeLogDirs answers (kafka-python's decoded v4+ responses) as `LogDir` values.

Per log dir: its volume's KIP-827 total and usable bytes (-1, "unknown", is None) and every partition
replica in it (`partitionSize`). A future replica (`isFutureKey`: the copy an AlterReplicaLogDirs
move is writing in another log dir) is left out: the current replica is still reported where it is,
so counting both would count the partition twice, and the copy's growth is the move's, not the
topic's. A replica's leader flag comes from `leader_of` (the round's Metadata answer), None when
the partition's leader is not known there (no leader elected, or no broker answered Metadata).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import kafka.errors as kerrors

from quotaplane.live.admin import LogDir, Replica

LeaderOf = Callable[[str, int], "int | None"]
"""The leader broker of `(topic, partition)`, None when unknown."""


def error_text(code: int, message: str | None = None) -> str:
    """`"<CODE>: <message>"` of a Kafka error code."""
    error = kerrors.for_code(code)
    name = error.message if error.errno == code else f"ERROR_{code}"
    return f"{name}: {message or error.description}"


def broker_failure(broker: int, code: str, message: str) -> LogDir:
    """The one `LogDir` that stands for a broker that gave no log dirs."""
    return LogDir(broker, "", None, None, f"{code}: broker {broker}: {message}")


def replicas(broker: int, topics: Any, leader_of: LeaderOf | None = None) -> tuple[Replica, ...]:
    """The current (not future) replicas of one log dir's topics, ordered by topic and partition."""
    out = []
    for topic in topics or ():
        for p in topic.partitions or ():
            if p.is_future_key:
                continue
            leader = leader_of(topic.name, p.partition_index) if leader_of is not None else None
            is_leader = None if leader is None or leader < 0 else leader == broker
            out.append(Replica(topic.name, p.partition_index, p.partition_size, is_leader))
    return tuple(sorted(out, key=lambda r: (r.topic, r.partition)))


def broker_log_dirs(broker: int, response: Any, leader_of: LeaderOf | None = None) -> list[LogDir]:
    """The log dirs of one broker's DescribeLogDirs answer."""
    if getattr(response, "error_code", 0):  # v3+: an error for the whole request
        return [broker_failure(broker, *error_text(response.error_code).split(": ", 1))]
    if not response.results:
        return [broker_failure(broker, "NO_LOG_DIRS", "DescribeLogDirs listed no log dir")]
    out = []
    for r in response.results:
        if r.error_code:
            out.append(LogDir(broker, r.log_dir, None, None, error_text(r.error_code)))
        else:
            out.append(LogDir(broker, r.log_dir, r.total_bytes if r.total_bytes >= 0 else None,
                              r.usable_bytes if r.usable_bytes >= 0 else None, None,
                              replicas(broker, r.topics, leader_of)))
    return out
