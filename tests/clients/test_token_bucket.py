"""Kafka's TokenBucket (controller mutation quota)."""

from __future__ import annotations

from quotaplane.clients.engine.token_bucket import TokenBucket


def test_the_javadoc_example() -> None:
    """Q=5, S=100, W=1 s: burst 500; a burst of 560 leaves -60 tokens, 12 s to refill to zero."""
    bucket = TokenBucket(100, 1000)
    t = 1_767_225_600_000
    assert bucket.measure(5.0, t) == 500.0  # a new bucket fills at its first refill (t - 0 ms)
    bucket.record(5.0, 560.0, t)
    assert bucket.tokens == -60.0
    assert bucket.measure(5.0, t + 12_000) == 0.0


def test_a_new_bucket_starts_empty_at_time_zero() -> None:
    bucket = TokenBucket(11, 1000)
    assert bucket.measure(5.0, 2000) == 10.0  # 5/s x 2 s since time 0, below the burst of 55


def test_refill_is_capped_at_the_burst() -> None:
    bucket = TokenBucket(2, 1000)
    bucket.measure(10.0, 10_000)
    assert bucket.tokens == 20.0
    bucket.record(10.0, 5.0, 10_000)
    assert bucket.measure(10.0, 10_400) == 19.0
    assert bucket.measure(10.0, 99_000) == 20.0
