"""What the real-broker tests do to Pulsar: fresh namespaces, backlog quotas, publish rates, producing,
and reading its own decisions back (its topic stats and its `/metrics`)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from prometheus_client.parser import text_string_to_metric_families

from tests.support.pulsar.fixture import PulsarTarget

T = TypeVar("T")
PAYLOAD = b"q" * 100


def fresh_namespace(target: PulsarTarget, prefix: str = "t") -> str:
    """A new namespace in `public`, so that each test's quotas and topics are its own."""
    ns = f"public/{prefix}-{uuid.uuid4().hex[:8]}"
    target.call("PUT", f"admin/v2/namespaces/{ns}", {})
    return ns


def set_namespace_quota(target: PulsarTarget, ns: str, quota_type: str, limit: int, policy: str) -> None:
    """`POST /admin/v2/namespaces/{ns}/backlogQuota?backlogQuotaType=...`"""
    target.call("POST", f"admin/v2/namespaces/{ns}/backlogQuota?backlogQuotaType={quota_type}",
                _quota_body(quota_type, limit, policy))


def set_topic_quota(target: PulsarTarget, topic: str, quota_type: str, limit: int, policy: str) -> None:
    """`POST /admin/v2/persistent/{t}/{ns}/{topic}/backlogQuota?backlogQuotaType=...` (a topic policy)."""
    target.call("POST", f"admin/v2/{topic.replace('://', '/')}/backlogQuota?backlogQuotaType={quota_type}",
                _quota_body(quota_type, limit, policy))


def _quota_body(quota_type: str, limit: int, policy: str) -> dict[str, Any]:
    key = "limitSize" if quota_type == "destination_storage" else "limitTime"
    return {key: limit, "policy": policy}


def topic_stats(target: PulsarTarget, topic: str) -> dict[str, Any]:
    return target.call("GET", f"admin/v2/{topic.replace('://', '/')}/stats")


def wait_until(what: str, probe: Callable[[], T | None], timeout_s: float = 20.0, every_s: float = 0.2) -> T:
    """`probe()` once it is not None/False; AssertionError naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(every_s)
    raise AssertionError(f"{what}: not within {timeout_s:g} s (last: {last!r})")


def produce(client: Any, topic: str, count: int, payload: bytes = PAYLOAD) -> list[int]:
    """`count` messages without batching (one entry each), each sent synchronously; their publish times."""
    producer = client.create_producer(topic, batching_enabled=False, send_timeout_millis=10_000)
    try:
        times = []
        for _ in range(count):
            producer.send(payload)
            times.append(int(time.time() * 1000))
        return times
    finally:
        producer.close()


def subscribe(client: Any, topic: str, name: str = "slow") -> None:
    """A durable subscription that never acknowledges: created, then its consumer closed."""
    client.subscribe(topic, name).close()


def metric_samples(text: str, name: str, **labels: str) -> list[tuple[dict[str, str], float]]:
    """The samples of metric `name` (the sample's full name) whose labels include `labels`."""
    out = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                out.append((dict(sample.labels), float(sample.value)))
    return out


def metric(text: str, name: str, **labels: str) -> float | None:
    """The one sample of `name` with those labels, or None."""
    found = metric_samples(text, name, **labels)
    assert len(found) <= 1, f"{name}{labels}: {len(found)} samples"
    return found[0][1] if found else None
