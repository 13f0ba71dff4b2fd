"""Pulsar's `AsyncTokenBucket` (PIP-322) with a consistent balance, in exact integers.

Source: Pulsar `pulsar-broker/.../qos/AsyncTokenBucket.java` (`calculateNewTokensSinceLastUpdate`,
`consumeTokensAndCheckIfContainsTokens`, `calculateThrottlingDuration`) and
`FinalRateAsyncTokenBucket(Builder)` (capacity and initial tokens default to the rate; the target after
throttling is the tokens of the 16 ms resolution, at least 1). Rules: docs/notices.md (The token bucket).
"""

from __future__ import annotations

RATE_PERIOD_NS = 1_000_000_000  # `ratePeriodNanos`: one second
RESOLUTION_NS = 16_000_000  # `DEFAULT_RESOLUTION_NANOS`: 16 ms


def new_tokens(duration_ns: int, rate: int) -> tuple[int, int]:
    """Tokens made in `duration_ns` and the nanoseconds carried forward (Java's truncating division).

    Java computes `new = d * rate / P` and `r = d - new * P / rate`; with `d = a * P + b` the same
    values are `a * rate + b * rate // P` and `b - ((b * rate // P) * P) // rate`, which never overflow.
    """
    whole, part = divmod(duration_ns, RATE_PERIOD_NS)
    part_tokens = part * rate // RATE_PERIOD_NS
    return whole * rate + part_tokens, part - (part_tokens * RATE_PERIOD_NS) // rate


def duration_ns(need: int, rate: int) -> int:
    """`need * P / rate` (Java, truncating) without overflow."""
    whole, part = divmod(need, rate)
    return whole * RATE_PERIOD_NS + part * RATE_PERIOD_NS // rate


def target_tokens(rate: int) -> int:
    """`targetAmountOfTokensAfterThrottling`: `max(resolution * rate / P, 1)`."""
    return max(RESOLUTION_NS * rate // RATE_PERIOD_NS, 1)


class TokenBucket:
    """One bucket (bytes or messages) of a limiter, created at its first event `t_ns`."""

    def __init__(self, rate: int, t_ns: int) -> None:
        self.rate = rate
        self.capacity = rate
        self.tokens = rate
        self.last_ns = t_ns
        self.remainder_ns = 0

    def consume(self, t_ns: int, consumed: int) -> int:
        """Update the balance to `t_ns`, take `consumed` tokens and return the balance."""
        made, carried = new_tokens(t_ns - self.last_ns + self.remainder_ns, self.rate)
        self.remainder_ns = carried if carried > 0 else 0
        self.last_ns = t_ns
        self.tokens = min(self.tokens + made, self.capacity) - consumed
        return self.tokens

    def throttling_ns(self, t_ns: int) -> int:
        """`calculateThrottlingDuration` at `t_ns`: a forced update (which may turn the carried
        nanoseconds into a token), then the time to the target balance."""
        self.consume(t_ns, 0)
        if self.tokens > 0:
            return 0
        return duration_ns(target_tokens(self.rate) - self.tokens, self.rate)
