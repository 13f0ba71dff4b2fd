"""Volume, the per-volume limit rules and the legacy aggregate rule, at their boundaries."""

from __future__ import annotations

import pytest

from quotaplane.core.errors import InputError
from quotaplane.storage.config import VolumeLimit
from quotaplane.storage.engine import Volume, assess, breached, legacy_factor, threshold_bytes


def lim(kind: str, value: float) -> VolumeLimit:
    return VolumeLimit(kind, value, "p")  # type: ignore[arg-type]


def test_volume_derives_used_bytes_and_available_ratio() -> None:
    v = Volume(1, "/d", 1000, 250)
    assert (v.used_bytes, v.available_ratio, v.key) == (750, 0.25, (1, "/d"))


def test_zero_capacity_volume_has_ratio_zero() -> None:
    assert Volume(1, "/d", 0, 0).available_ratio == 0.0


@pytest.mark.parametrize(("args", "field", "rule"), [
    ((1, "/d", -1, 0), "total_bytes", "total_bytes must not be negative"),
    ((1, "/d", 10, -1), "available_bytes", "available_bytes must not be negative"),
    ((1, "/d", 10, 11), "available_bytes", "available_bytes must not exceed total_bytes (10)"),
    ((1, "", 10, 1), "log_dir", "must be a non-empty string"),
    ((1.5, "/d", 10, 1), "broker_id", "must be a whole number"),
    ((1, "/d", True, 1), "total_bytes", "must be a whole number"),
])
def test_invalid_volumes_are_rejected_naming_field_value_and_rule(args: tuple, field: str, rule: str) -> None:
    with pytest.raises(InputError) as info:
        Volume(*args)
    assert info.value.field == field and rule in str(info.value)


@pytest.mark.parametrize(("limit", "available", "hit"), [
    (lim("availableBytesBelow", 100), 100, True),    # <=: exactly at the limit breaches
    (lim("availableBytesBelow", 100), 101, False),
    (lim("availableRatioBelow", 0.1), 100, True),    # 100/1000 == 0.1
    (lim("availableRatioBelow", 0.1), 101, False),
    (lim("usedBytesAbove", 900), 100, True),         # used 900 >= 900
    (lim("usedBytesAbove", 900), 101, False),
    (lim("availableRatioBelow", 0.0), 0, True),
    (lim("availableRatioBelow", 1.0), 1000, True),
    (lim("availableBytesBelow", 0), 0, True),
])
def test_limit_comparisons_are_inclusive(limit: VolumeLimit, available: int, hit: bool) -> None:
    assert breached(limit, Volume(1, "/d", 1000, available)) is hit


def test_zero_capacity_volume_breaches_every_ratio_limit() -> None:
    assert breached(lim("availableRatioBelow", 0.0), Volume(1, "/d", 0, 0))


def test_thresholds_in_available_bytes() -> None:
    v = Volume(1, "/d", 1000, 10)
    assert threshold_bytes(lim("availableBytesBelow", 50), v) == 50.0
    assert threshold_bytes(lim("availableRatioBelow", 0.25), v) == 250.0
    assert threshold_bytes(lim("usedBytesAbove", 900), v) == 100.0
    assert threshold_bytes(lim("usedBytesAbove", 2000), v) == -1000.0


SOFT, HARD = lim("availableBytesBelow", 300), lim("availableBytesBelow", 100)


@pytest.mark.parametrize(("available", "factor"), [
    (1000, 1.0), (301, 1.0), (300, 1.0), (200, 0.5), (150, 0.25), (101, 0.005), (100, 0.0), (0, 0.0),
])
def test_linear_ramp_from_soft_to_hard(available: int, factor: float) -> None:
    a = assess(Volume(1, "/d", 1000, available), SOFT, HARD)
    assert a.factor == factor
    assert a.headroom == available - 100.0
    assert (a.soft_threshold, a.hard_threshold) == (300.0, 100.0)


def test_soft_equal_to_hard_is_a_step() -> None:
    assert assess(Volume(1, "/d", 1000, 101), HARD, HARD).factor == 1.0
    assert assess(Volume(1, "/d", 1000, 100), HARD, HARD).factor == 0.0


def test_soft_past_the_hard_threshold_is_a_step_at_the_hard_limit() -> None:
    soft = lim("availableBytesBelow", 50)
    assert assess(Volume(1, "/d", 1000, 80), soft, HARD).factor == 0.0
    assert assess(Volume(1, "/d", 1000, 101), soft, HARD).factor == 1.0


def test_mixed_types_convert_each_threshold_per_volume() -> None:
    soft, hard = lim("availableRatioBelow", 0.5), lim("availableBytesBelow", 100)
    small, big = Volume(1, "/a", 400, 150), Volume(2, "/b", 4000, 1050)
    assert assess(small, soft, hard).factor == (150 - 100) / (200 - 100)
    assert assess(big, soft, hard).factor == (1050 - 100) / (2000 - 100)
    # on a volume where the ratio threshold lies below the bytes threshold, only the hard limit acts
    tiny = Volume(3, "/c", 150, 120)
    assert assess(tiny, soft, hard).factor == 1.0
    assert assess(Volume(3, "/c", 150, 100), soft, hard).factor == 0.0


def test_used_bytes_ramp() -> None:
    a = assess(Volume(1, "/d", 1000, 150), lim("usedBytesAbove", 800), lim("usedBytesAbove", 900))
    assert a.factor == 0.5


@pytest.mark.parametrize(("used", "factor"), [
    (0, 1.0), (100, 1.0), (101, 1.0 - 1.0 / 100.0), (150, 0.5), (199, 1.0 - 99.0 / 100.0), (200, 0.0),
    (10**12, 0.0),
])
def test_legacy_rule_strict_ramp_and_inclusive_hard(used: int, factor: float) -> None:
    assert legacy_factor(used, 100, 200) == factor


def test_legacy_rule_with_soft_not_below_hard_is_a_step() -> None:
    assert legacy_factor(199, 300, 200) == 1.0 and legacy_factor(200, 300, 200) == 0.0
    assert legacy_factor(2**62, 2**63 - 1, 2**63 - 1) == 1.0
