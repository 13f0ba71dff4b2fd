"""The producer's throttling error (PIP-385, "Client side rate limit exception"; docs/notices.md)."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException

from quotaplane.notices.protocol import Reason


class ProducerThrottledError(KafkaException):
    """A message held for a throttled topic longer than 80% of its send timeout.

    PIP-385's `ProducerThrottledException`: raised instead of a timeout when the time the message was
    throttled over its send timeout is above 80%. It names the topic, the reason of the last
    `ThrottleProducer` command for it, how long the message was held and its send timeout. It is a
    `KafkaException` whose `args[0]` is a `KafkaError` with the code of the timeout it replaces
    (`_MSG_TIMED_OUT`), so generic confluent-kafka handlers keep working.
    """

    def __init__(self, topic: str, reason: Reason, held_ms: float, send_timeout_ms: int) -> None:
        self.topic = topic
        self.reason = reason
        self.held_ms = held_ms
        self.send_timeout_ms = send_timeout_ms
        message = (f"producer throttled on topic {topic!r} ({reason.name}): message held "
                   f"{held_ms:.3f} ms, above 80% of its send timeout of {send_timeout_ms} ms")
        super().__init__(KafkaError(KafkaError._MSG_TIMED_OUT, message))
        self.message = message

    def code(self) -> int:
        """The code of the timeout this error replaces (`KafkaError._MSG_TIMED_OUT`)."""
        return KafkaError._MSG_TIMED_OUT

    def __str__(self) -> str:
        return self.message
