"""The units the report writes values in."""

from __future__ import annotations

import pytest

from quotaplane.core.units import rate_text, size_text, when_text


@pytest.mark.parametrize(("value", "text"), [
    (None, "—"), (0, "0 B"), (812, "812 B"), (1023, "1,023 B"), (1024, "1 KiB"), (29_184, "28.5 KiB"),
    (372_627_378, "355 MiB"), (1_349_547_148, "1.26 GiB"), (1023 * 2**30, "1,023 GiB"),
    (1.05 * 2**40, "1.05 TiB"), (-12_083, "-11.8 KiB"),
])
def test_sizes_are_binary_units(value: float | None, text: str) -> None:
    assert size_text(value) == text


def test_rates_and_times() -> None:
    assert rate_text(1.5 * 2**20) == "1.5 MiB/s" and rate_text(None) == "—"
    assert when_text(1_717_416_001_720) == "2024-06-03 12:00 UTC"
    assert when_text(1_717_416_001_720, seconds=True) == "2024-06-03 12:00:01 UTC"
    assert when_text(None) == "—"
