"""Time buckets of a plot or a summary: how wide, so a span fits in a bounded number of them."""

from __future__ import annotations


def bucket_width(first: int, last: int, buckets: int) -> int:
    """The smallest whole width (at least 1) that puts every value from `first` to `last`, both
    included, into at most `buckets` buckets starting at `first`: ceil((last - first + 1) / buckets)."""
    if buckets < 1:
        raise ValueError(f"buckets must be at least 1, got {buckets}")
    return max(1, -(-(last - first + 1) // buckets))
