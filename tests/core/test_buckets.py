"""`bucket_width`: the span from first to last, both included, in at most `buckets` buckets."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from quotaplane.core.buckets import bucket_width


def test_a_span_of_exactly_the_bucket_count_has_width_one_and_one_more_value_width_two() -> None:
    assert bucket_width(0, 599, 600) == 1
    assert bucket_width(0, 600, 600) == 2
    assert bucket_width(10, 10, 600) == 1  # one value
    assert bucket_width(10, 9, 600) == 1  # empty span: still a usable width


@given(st.integers(-10**12, 10**12), st.integers(0, 10**9), st.integers(1, 1000))
def test_the_width_is_the_smallest_that_fits(first: int, length: int, buckets: int) -> None:
    last = first + length
    width = bucket_width(first, last, buckets)
    assert (last - first) // width < buckets  # the last value's bucket is within the count
    if width > 1:
        assert (last - first) // (width - 1) >= buckets  # one narrower does not fit


def test_no_buckets_is_an_error_naming_the_value() -> None:
    with pytest.raises(ValueError, match="buckets must be at least 1, got 0"):
        bucket_width(0, 1, 0)
