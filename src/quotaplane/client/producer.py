"""`ThrottleAwareProducer`: a confluent-kafka `Producer` that honours PIP-385 throttle notices.

docs/notices.md, section "The producer". Messages of a throttled topic are held in order until the
pause ends, then sent; other topics go straight through; a message held more than 80% of its send
timeout fails with `ProducerThrottledError` through its delivery callback and its future.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from quotaplane.client.base import (
    PULSAR_SEND_TIMEOUT_MS,
    NoticeAwareProducer,
    check_send_timeout,
    monotonic_deadline,
    remaining,
)
from quotaplane.client.errors import ProducerThrottledError
from quotaplane.client.hold import Clock
from quotaplane.client.metrics import ClientMetrics
from quotaplane.client.notices import Address, NoticeConnection

DeliveryCallback = Callable[[Any, Any], None]
_POLL_SLICE_S = 0.05


@dataclass(frozen=True)
class HeldMessage:
    """The message a delivery callback receives when it failed before reaching the producer (the
    accessors of `confluent_kafka.Message` that apply; `error()` is the `KafkaError`)."""

    _topic: str
    _value: Any
    _key: Any
    _headers: Any
    _error: KafkaError

    def topic(self) -> str:
        return self._topic

    def value(self) -> Any:
        return self._value

    def key(self) -> Any:
        return self._key

    def headers(self) -> Any:
        return self._headers

    def error(self) -> KafkaError:
        return self._error

    def partition(self) -> None:
        return None

    def offset(self) -> None:
        return None


class ThrottleAwareProducer(NoticeAwareProducer):
    """A confluent-kafka producer that holds the messages of throttled topics.

    `config` is the `Producer`'s configuration; unless it sets `message.timeout.ms`, that is set to
    `send_timeout_ms` (Pulsar's `sendTimeout`, default 30000 ms; 0: none), so a released message has
    the same timeout once sent. `notices` is the notice channel's `(host, port)` or a shared
    `NoticeConnection`. The principal registered with each producer id defaults to `sasl.username`.
    Delivery callbacks run in `poll` and `flush`, as confluent-kafka's; futures complete as soon as
    the outcome is known.
    """

    def __init__(self, config: Mapping[str, Any], *, notices: Address | NoticeConnection | None = None,
                 send_timeout_ms: int = PULSAR_SEND_TIMEOUT_MS, principal: str | None = None,
                 clock: Clock = time.monotonic, metrics: ClientMetrics | None = None,
                 background: bool = True, producer: Producer | None = None) -> None:
        config = dict(config)
        config.setdefault("message.timeout.ms", check_send_timeout(send_timeout_ms))
        self._owns_producer = producer is None
        self.producer = producer if producer is not None else Producer(config)  # bad config: no threads
        super().__init__(notices=notices, send_timeout_ms=send_timeout_ms,
                         principal=principal if principal is not None else config.get("sasl.username"),
                         client_id=str(config.get("client.id", "quotaplane-producer")), clock=clock,
                         metrics=metrics, background=background)

    def produce(self, topic: str, value: Any = None, key: Any = None,
                on_delivery: DeliveryCallback | None = None, *, send_timeout_ms: int | None = None,
                **kwargs: Any) -> Future[Message]:
        """Produce to `topic` now, or hold the message while the topic is throttled.

        Other arguments (`partition`, `timestamp`, `headers`, `callback`) are `Producer.produce`'s.
        On the direct path its exceptions (`BufferError`, `KafkaException`) are raised here; for a
        held message they reach the callback and the future. `send_timeout_ms` overrides the
        producer's for this message.
        """
        callback = on_delivery if on_delivery is not None else kwargs.pop("callback", None)
        timeout = self.send_timeout_ms if send_timeout_ms is None else check_send_timeout(send_timeout_ms)
        self.register_topic(topic)
        future: Future[Message] = Future()
        future.set_running_or_notify_cancel()

        def delivered(err: KafkaError | None, msg: Message) -> None:
            if err is None:
                future.set_result(msg)
            else:
                future.set_exception(KafkaException(err))
            if callback is not None:
                callback(err, msg)

        def send() -> None:
            self.producer.produce(topic, value, key, on_delivery=delivered, **kwargs)

        def fail(exc: Exception) -> None:
            future.set_exception(exc)
            if callback is not None:
                err = _kafka_error(exc)
                message = HeldMessage(topic, value, key, kwargs.get("headers"), err)
                self._callbacks.append(lambda: callback(exc if isinstance(exc, ProducerThrottledError)
                                                        else err, message))

        if not self._hold.submit(topic, timeout, send, fail):
            self._wake.set()
        return future

    def poll(self, timeout: float | None = 0) -> int:
        """Serve delivery callbacks (the producer's and the failures of held messages), waiting up to
        `timeout` seconds (None: until one comes) for one; how many were served."""
        deadline = monotonic_deadline(timeout)
        while True:
            self._hold.pump()
            served = self._serve_callbacks()
            left = remaining(deadline)
            wait = 0.0 if served else _POLL_SLICE_S if left is None else min(_POLL_SLICE_S, left)
            served += self.producer.poll(wait) + self._serve_callbacks()
            if served or left == 0.0:
                return served

    def flush(self, timeout: float | None = None) -> int:
        """Wait until every message, held ones included, is delivered or failed (or `timeout`
        seconds passed), serving callbacks; the number of messages still waiting."""
        deadline = monotonic_deadline(timeout)
        while True:
            self._hold.pump()
            self._serve_callbacks()
            left = remaining(deadline)
            if self._hold.held() == 0 or left == 0.0:
                break
            self.producer.poll(_POLL_SLICE_S if left is None else min(_POLL_SLICE_S, left))
        left = remaining(deadline)
        waiting = self.producer.flush() if left is None else self.producer.flush(left)
        self._serve_callbacks()
        return waiting + self._hold.held()

    def close(self, timeout: float | None = None) -> int:
        """Flush (held messages included: they wait for their pause or fail by the 80% rule), stop the
        notice side and close the Kafka producer when this wrapper created it; what was left unsent."""
        try:
            left = self.flush(timeout)
        finally:
            super().close()
            if self._owns_producer:
                self.producer.close()
        return left

    def __len__(self) -> int:
        return len(self.producer) + self._hold.held()

    def __enter__(self) -> ThrottleAwareProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _kafka_error(exc: Exception) -> KafkaError:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0]
    return KafkaError(KafkaError._FAIL, f"{type(exc).__name__}: {exc}")
