"""The forecast's reference engine at its boundaries (docs/forecast.md)."""

from __future__ import annotations

import math

import pytest

from quotaplane.core.errors import ConfigError
from quotaplane.forecast.config import ForecastSettings, parse_duration_ms
from quotaplane.forecast.engine.backlog import BacklogTick, forecast_backlogs
from quotaplane.forecast.engine.replicas import ReplicaPoint, growths, replica_growth
from quotaplane.forecast.engine.timing import seconds_to
from quotaplane.forecast.engine.trend import trend
from quotaplane.forecast.engine.volumes import VolumePoint, forecast_volumes, shares
from tests.forecast.strategies import storage_config

MIN = 60_000
HOUR = 3_600_000


def rp(ts: int, size: int, topic: str = "t", partition: int = 0, broker: int = 1, log_dir: str = "/d",
       leader: bool | None = None) -> ReplicaPoint:
    return ReplicaPoint(ts, "c", broker, log_dir, topic, partition, size, leader)


def test_trend_over_the_window_and_its_second_half() -> None:
    t = trend([(0, 0), (MIN, 10), (2 * MIN, 40), (4 * MIN, 100)])
    assert t.rate == 100 * 1000 / (4 * MIN)
    # the midpoint is 2 min: the last point at or before it is (2 min, 40)
    assert t.recent == 60 * 1000 / (2 * MIN)
    assert (t.last_ts_ms, t.last) == (4 * MIN, 100)


def test_a_single_time_has_no_trend() -> None:
    t = trend([(5, 7)])
    assert (t.rate, t.recent, t.last) == (None, None, 7)


def test_a_filling_replica_grows_at_its_trend() -> None:
    g = replica_growth([rp(0, 100), rp(MIN, 160), rp(2 * MIN, 220)])
    assert g.drops == 0 and g.rate == 1.0 and g.recent == 1.0


def test_a_replica_at_its_retention_limit_grows_only_between_its_troughs() -> None:
    # writes 60 B/min, deletes 100 B segments: troughs 60 then 80 (two minutes apart)
    sizes = [100, 160, 60, 120, 180, 80]
    g = replica_growth([rp(i * MIN, s) for i, s in enumerate(sizes)])
    assert g.drops == 2
    assert g.rate == g.recent == 20 * 1000 / (3 * MIN)


def test_troughs_rising_in_both_halves_are_extrapolated_to_now() -> None:
    # troughs at 0, 2, 4 min rising by 60 then 120 bytes: early 0.5 B/s, late 1 B/s
    sizes = [100, 0, 100, 60, 200, 180]
    g = replica_growth([rp(i * MIN, s) for i, s in enumerate(sizes)])
    assert g.drops == 3
    assert g.rate == 1.0 + (1.0 - 0.5) / 2.0  # accelerating: late + (late - early) / 2
    assert g.recent == 180 * 1000 / (4 * MIN)  # the lookback's slope
    assert g.acceleration == 0.5 / 120.0  # (late - early) per second over half the troughs' span


def test_a_decelerating_rise_takes_the_late_slope_and_a_swing_the_whole() -> None:
    slowing = [100, 0, 200, 120, 300, 180]  # troughs 0, 120, 180: early 1 B/s, late 0.5 B/s
    decelerating = replica_growth([rp(i * MIN, s) for i, s in enumerate(slowing)])
    assert (decelerating.rate, decelerating.acceleration) == (0.5, 0.0)
    swing = [100, 0, 300, 120, 200, 60]  # troughs 0, 120, 60: up then down
    assert replica_growth([rp(i * MIN, s) for i, s in enumerate(swing)]).rate == 60 * 1000 / (4 * MIN)


def test_a_filling_replica_is_fitted_over_the_window_only() -> None:
    points = [rp(0, 0), rp(MIN, 1000), rp(2 * MIN, 1060), rp(3 * MIN, 1120)]
    assert replica_growth(points, window_start_ms=MIN).rate == 1.0


def test_one_trough_means_no_growth() -> None:
    g = replica_growth([rp(0, 100), rp(MIN, 160), rp(2 * MIN, 60), rp(3 * MIN, 120)])
    assert g.drops == 1 and g.rate == 0.0 and g.recent == 0.0


def test_followers_take_their_leaders_growth() -> None:
    points = [rp(0, 0, leader=True), rp(MIN, 60, leader=True),
              rp(0, 0, broker=2), rp(MIN, 30, broker=2),  # a lagging follower
              rp(0, 0, broker=3, topic="u"), rp(MIN, 30, broker=3, topic="u")]  # no leader seen
    by_broker = {g.broker_id: g for g in growths(points)}
    assert by_broker[1].rate == by_broker[2].rate == 1.0
    assert by_broker[3].rate == 0.5


def test_the_leader_seen_last_wins_when_leadership_moved() -> None:
    points = [rp(0, 0, leader=True), rp(MIN, 60, leader=True),  # leader until 1 min
              rp(0, 0, broker=2), rp(2 * MIN, 240, broker=2, leader=True)]  # leader at 2 min
    assert {g.broker_id: g.rate for g in growths(points)} == {1: 2.0, 2: 2.0}


@pytest.mark.parametrize(("reached", "distance", "growth", "expected"), [
    (True, 100.0, None, 0.0),
    (False, 100.0, 1.0, 100.0),
    (False, 100.0, 100.0 / 3600, 3600.0),  # exactly the horizon: still approached
    (False, 100.0, 0.0, None),
    (False, 100.0, -1.0, None),
    (False, 100.0, None, None),
    (False, 100.0, 0.01, None),  # beyond the horizon
])
def test_time_to_a_level(reached, distance, growth, expected) -> None:
    assert seconds_to(reached, distance, growth, 3600.0) == expected


def test_time_to_a_level_with_acceleration() -> None:
    # 1 B/s now, 0.02 B/s^2: 100 bytes in t where t + 0.01 t^2 = 100, t = (-1 + sqrt(1 + 4)) / 0.02
    assert seconds_to(False, 100.0, 1.0, 3600.0, 0.02) == (-1.0 + math.sqrt(1.0 + 2.0 * 0.02 * 100.0)) / 0.02
    assert seconds_to(False, 100.0, -1.0, 3600.0, 0.02) is not None  # shrinking now, but accelerating
    assert seconds_to(False, 0.0, 1.0, 3600.0, 0.02) == 0.0
    assert seconds_to(False, 1e9, 1.0, 3600.0, 0.02) is None  # beyond the horizon
    assert seconds_to(True, 100.0, None, 3600.0, 0.02) == 0.0


def test_shares_are_of_the_positive_growth_largest_first_ties_by_name() -> None:
    assert shares({"b": 1.0, "a": 1.0, "c": 2.0, "d": -5.0, "e": 0.0}, 2) == [("c", 0.5), ("a", 0.25)]
    assert shares({"a": -1.0}, 5) == []


def volume(ts: int, available: int, total: int = 1000) -> VolumePoint:
    return VolumePoint(ts, "c", 1, "/d", total, available)


def test_a_volume_reaches_its_limits_at_its_replicas_growth() -> None:
    settings = ForecastSettings(window_ms=HOUR, horizon_ms=7 * 86_400_000)
    volumes = [volume(0, 900), volume(100_000, 800)]
    replicas = [rp(0, 0, leader=True), rp(100_000, 100, leader=True)]  # 1 B/s
    [f] = forecast_volumes(volumes, replicas, storage_config("ratio"), settings)
    assert f.method == "partitions" and f.growth_bytes_per_second == 1.0
    assert f.soft_threshold_bytes == 500.0 and f.hard_threshold_bytes == 250.0
    assert (f.seconds_to_soft, f.seconds_to_hard, f.seconds_to_full) == (300.0, 550.0, 800.0)
    assert f.top_contributors == ({"topic": "t", "share": 1.0},)


def test_a_breached_limit_is_zero_seconds_away() -> None:
    settings = ForecastSettings()
    [f] = forecast_volumes([volume(0, 250)], [], storage_config("ratio"), settings)
    # availableRatioBelow breaches at `<=`: 250 / 1000 = 0.25 is at the hard limit
    assert (f.seconds_to_soft, f.seconds_to_hard) == (0.0, 0.0)
    assert f.seconds_to_full is None  # a single observation: no trend
    assert f.method == "volume"


def test_without_partition_sizes_the_volume_trend_is_used() -> None:
    [f] = forecast_volumes([volume(0, 900), volume(100_000, 880)], [], None, ForecastSettings())
    assert f.method == "volume" and f.growth_bytes_per_second == 0.2
    assert f.seconds_to_hard is None and f.hard_threshold_bytes is None
    assert f.seconds_to_full == 880 / 0.2
    assert f.low == f.high == 880 / 0.2  # the band is around full without per-volume limits


def test_the_window_is_open_at_its_start_and_closed_at_its_end() -> None:
    settings = ForecastSettings(window_ms=100_000)
    volumes = [volume(0, 100), volume(50_000, 900), volume(100_000, 800)]
    [f] = forecast_volumes(volumes, [], None, settings)
    assert f.growth_bytes_per_second == 100 * 1000 / 50_000  # the point at ts 0 is outside
    assert forecast_volumes(volumes, [], None, settings, at_ms=-1) == []


def test_replicas_that_left_the_volume_do_not_count() -> None:
    replicas = [rp(0, 0), rp(MIN, 600, topic="gone"), rp(0, 0, topic="gone"), rp(2 * MIN, 120)]
    [f] = forecast_volumes([volume(0, 900), volume(2 * MIN, 880)], replicas, None, ForecastSettings())
    assert f.growth_bytes_per_second == 1.0
    assert [c["topic"] for c in f.top_contributors] == ["t"]


def tick(ts: int, size: int, age: int | None, size_limit: int = 1000, time_limit: int = 600) -> BacklogTick:
    return BacklogTick(ts, "persistent://t/ns/a", "t/ns", size, age, size_limit, time_limit)


def test_backlog_quota_proximity() -> None:
    [f] = forecast_backlogs([tick(0, 0, 0), tick(100_000, 500, 100)], ForecastSettings())
    assert f.seconds_to_size_quota == 100.0  # 500 B left at 5 B/s
    assert f.seconds_to_time_quota == 500.0  # 500 s left at 1 s/s
    assert (f.seconds_to_quota, f.quota_type) == (100.0, "size")


def test_backlog_boundaries_follow_pulsar() -> None:
    settings = ForecastSettings()
    [size_at_limit] = forecast_backlogs([tick(0, 1000, 0)], settings)
    assert size_at_limit.seconds_to_size_quota == 0.0  # size >= limit is exceeded
    [age_at_limit] = forecast_backlogs([tick(0, 0, 600)], settings)
    assert age_at_limit.seconds_to_time_quota is None  # age == limit is not (strictly older)
    [tie] = forecast_backlogs([tick(0, 1000, 700)], settings)
    assert tie.quota_type == "size"  # size is checked first
    assert forecast_backlogs([tick(0, 5, 5, size_limit=-1, time_limit=0)], settings) == []
    [no_size] = forecast_backlogs([tick(0, 5, None, size_limit=-1)], settings)
    assert no_size.seconds_to_size_quota is None and no_size.backlog_age_seconds is None  # unknown
    assert no_size.seconds_to_time_quota is None  # an unknown age counts as 0: below any limit


@pytest.mark.parametrize(("text", "ms"), [("90s", 90_000), ("30m", 1_800_000), ("6h", 21_600_000),
                                          ("7d", 604_800_000), ("250ms", 250), ("PT6H", 21_600_000)])
def test_durations(text, ms) -> None:
    assert parse_duration_ms("--window", text) == ms


@pytest.mark.parametrize("text", ["0s", "6", "six hours", "-1h", "PT0S"])
def test_bad_durations_name_the_option(text) -> None:
    with pytest.raises(ConfigError, match="--window"):
        parse_duration_ms("--window", text)
