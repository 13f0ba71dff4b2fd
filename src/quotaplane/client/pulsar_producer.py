"""`ThrottleAwarePulsarProducer`: a `pulsar.Producer` (pulsar-client) that honours throttle notices.

docs/notices.md, section "The producer": the same hold rule as `ThrottleAwareProducer`, for Pulsar's
one producer per topic. pulsar-client is not a quotaplane dependency: the adapter only calls the
producer it is given (`send_async`, `flush`, `close`, `topic`), and `create` imports nothing either.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from quotaplane.client.base import PULSAR_SEND_TIMEOUT_MS, NoticeAwareProducer
from quotaplane.client.errors import ProducerThrottledError
from quotaplane.client.hold import Clock
from quotaplane.client.metrics import ClientMetrics
from quotaplane.client.notices import Address, NoticeConnection

SendCallback = Callable[[Any, Any], None]


class ThrottleAwarePulsarProducer(NoticeAwareProducer):
    """Holds `send_async` while the producer's topic is throttled; `send` blocks through the hold.

    A held message that fails calls its callback with the exception (a `ProducerThrottledError`) as
    the result and None as the message id, from the timer thread (pulsar-client also calls send
    callbacks from its own threads). `send_timeout_ms` must be the producer's `send_timeout_millis`
    (`create` passes it).
    """

    def __init__(self, producer: Any, *, notices: Address | NoticeConnection | None = None,
                 send_timeout_ms: int = PULSAR_SEND_TIMEOUT_MS, principal: str | None = None,
                 client_id: str = "quotaplane-pulsar-producer", clock: Clock = time.monotonic,
                 metrics: ClientMetrics | None = None, background: bool = True) -> None:
        super().__init__(notices=notices, send_timeout_ms=send_timeout_ms, principal=principal,
                         client_id=client_id, clock=clock, metrics=metrics, background=background)
        self.producer = producer
        self.topic: str = producer.topic()
        self.register_topic(self.topic)

    @classmethod
    def create(cls, client: Any, topic: str, *, send_timeout_ms: int = PULSAR_SEND_TIMEOUT_MS,
               producer_config: dict[str, Any] | None = None, **kwargs: Any) -> ThrottleAwarePulsarProducer:
        """`client.create_producer(topic, send_timeout_millis=send_timeout_ms, ...)`, wrapped."""
        producer = client.create_producer(topic, send_timeout_millis=send_timeout_ms,
                                          **(producer_config or {}))
        return cls(producer, send_timeout_ms=send_timeout_ms, **kwargs)

    def send_async(self, content: bytes, callback: SendCallback | None = None, **kwargs: Any) -> Future[Any]:
        """`Producer.send_async`, held while the topic is throttled; a future of the message id."""
        future: Future[Any] = Future()
        future.set_running_or_notify_cancel()

        def sent(result: Any, message_id: Any) -> None:
            if getattr(result, "name", str(result)) == "Ok":
                future.set_result(message_id)
            else:
                future.set_exception(RuntimeError(f"send to {self.topic!r} failed: {result}"))
            if callback is not None:
                callback(result, message_id)

        def fail(exc: Exception) -> None:
            future.set_exception(exc)
            if callback is not None:
                callback(exc, None)

        if not self._hold.submit(self.topic, self.send_timeout_ms,
                                 lambda: self.producer.send_async(content, sent, **kwargs), fail):
            self._wake.set()
        return future

    def send(self, content: bytes, **kwargs: Any) -> Any:
        """Send and wait: the message id, or `ProducerThrottledError` (or the send's failure)."""
        return self.send_async(content, **kwargs).result()

    def is_throttled(self, topic: str | None = None) -> bool:  # type: ignore[override]
        """PIP-385's `Producer.isThrottled()` for this producer's topic."""
        return super().is_throttled(self.topic if topic is None else topic)

    def flush(self) -> None:
        """Wait until held messages are sent or failed, then flush the producer."""
        while self._hold.held(self.topic):
            self._hold.pump()
            time.sleep(0.01)
        self.producer.flush()

    def close(self) -> None:
        """Flush, close the producer and stop the notice side."""
        try:
            self.flush()
            self.producer.close()
        finally:
            super().close()


__all__ = ["ProducerThrottledError", "ThrottleAwarePulsarProducer"]
