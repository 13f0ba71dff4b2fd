"""The drop decision for one produce request (spec: Low level design, 3 and 4; Discussions, 1).

    if bytes > message.max.bytes                      -> error     (RecordTooLargeException)
    elif total_rate > total_threshold
         and topic_rate > topic_threshold             -> throttled (QuotaExceededException)
    else                                              -> accepted  (recorded in the bytes-in meters)

Both rate comparisons are strict; a threshold (a LONG) is compared as a double, as Java compares
`double > long`. The size check comes first: a batch Kafka cannot append is an error whatever the
rates, and it is never counted as bytes in.
"""

from __future__ import annotations

from quotaplane.topics.config import MESSAGE_MAX_BYTES, TOTAL_THRESHOLD

ACCEPTED = "accepted"
THROTTLED = "throttled"
ERROR = "error"
DECISIONS = (ACCEPTED, THROTTLED, ERROR)

REASON_QUOTA = "bytes_in_quota_exceeded"
REASON_TOO_LARGE = "message_too_large"

# The meters a request is marked in, by decision.
METER_OF = {ACCEPTED: "bytes_in", THROTTLED: "throttled_bytes_in", ERROR: "error_bytes_in"}
METERS = ("bytes_in", "throttled_bytes_in", "error_bytes_in")

EXPLICIT = "explicit"
DEFAULT_SHARE = "default"


def judge(size: int, message_max_bytes: int, total_rate: float, total_threshold: int,
          topic_rate: float, topic_threshold: int) -> tuple[str, str | None]:
    """`(decision, reason)` for one request; reason is None when accepted."""
    if size > message_max_bytes:
        return ERROR, REASON_TOO_LARGE
    if total_rate > float(total_threshold) and topic_rate > float(topic_threshold):
        return THROTTLED, REASON_QUOTA
    return ACCEPTED, None


def drop_message(reason: str, topic: str, size: int, message_max_bytes: int, total_threshold: int,
                 topic_threshold: int, threshold_source: str) -> str:
    """The log line of a dropped request (integers only, so both engines write the same text)."""
    if reason == REASON_TOO_LARGE:
        return f"record batch of {size} bytes exceeds {MESSAGE_MAX_BYTES}={message_max_bytes}"
    return (f"broker bytes-in rate above {TOTAL_THRESHOLD}={total_threshold} and topic {topic} "
            f"bytes-in rate above its {threshold_source} threshold {topic_threshold}")
