"""Kafka's `TokenBucket` stat, the controller mutation quota (KIP-599).

spec: Kafka `TokenBucket`. The bound is the refill rate per second; the burst
is `samples * window_seconds * bound`. A new bucket starts with 0 tokens last updated at time 0, so
its first refill (`bound * t / 1000`) fills it for any epoch-millisecond time.
"""

from __future__ import annotations


class TokenBucket:
    """Tokens refilled at `bound` per second up to the burst; a record takes `value` tokens."""

    def __init__(self, samples: int, window_ms: int) -> None:
        self.samples = samples
        self.window_ms = window_ms
        self.tokens = 0.0
        self.last_update_ms = 0

    def burst(self, bound: float) -> float:
        return self.samples * (self.window_ms / 1000.0) * bound

    def _refill(self, bound: float, burst: float, t: int) -> None:
        self.tokens = min(burst, self.tokens + bound * ((t - self.last_update_ms) / 1000.0))
        self.last_update_ms = t

    def measure(self, bound: float, t: int) -> float:
        """Refill to `t` and return the tokens (a quota is violated when they are below 0)."""
        self._refill(bound, self.burst(bound), t)
        return self.tokens

    def record(self, bound: float, value: float, t: int) -> None:
        burst = self.burst(bound)
        self._refill(bound, burst, t)
        self.tokens = min(burst, self.tokens - value)
