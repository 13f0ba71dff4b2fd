"""A small run's shuffles in no more partitions than the session's task slots, restored after; a
cached shuffle's partitions, one per slot."""

from __future__ import annotations

import pytest

from quotaplane.core.spark.session import (
    SHUFFLE_PARTITIONS,
    partitions_for_slots,
    slot_partitions,
    task_slots,
)
from tests.support.fake_spark import FakeSpark

pytestmark = pytest.mark.spark


@pytest.fixture
def eight(spark):
    """The session with Spark's shuffles in 8 partitions (the embedded default), reset after."""
    before = spark.conf.get(SHUFFLE_PARTITIONS)
    spark.conf.set(SHUFFLE_PARTITIONS, "8")
    yield spark
    spark.conf.set(SHUFFLE_PARTITIONS, before)


def test_more_partitions_than_slots_are_lowered_to_the_slots_and_restored(eight) -> None:
    assert task_slots(eight) == 2
    with partitions_for_slots(eight) as partitions:
        assert partitions == 2 and eight.conf.get(SHUFFLE_PARTITIONS) == "2"
        assert eight.range(100).repartition("id").rdd.getNumPartitions() == 2
    assert eight.conf.get(SHUFFLE_PARTITIONS) == "8"


def test_the_setting_is_restored_when_the_run_fails(eight) -> None:
    with pytest.raises(RuntimeError, match="boom"), partitions_for_slots(eight):
        raise RuntimeError("boom")
    assert eight.conf.get(SHUFFLE_PARTITIONS) == "8"


@pytest.mark.parametrize("setting", ["2", "1"])
def test_as_many_partitions_as_slots_or_fewer_are_left_as_they_are(spark, setting: str) -> None:
    before = spark.conf.get(SHUFFLE_PARTITIONS)
    spark.conf.set(SHUFFLE_PARTITIONS, setting)
    try:
        with partitions_for_slots(spark) as partitions:
            assert partitions is None and spark.conf.get(SHUFFLE_PARTITIONS) == setting
    finally:
        spark.conf.set(SHUFFLE_PARTITIONS, before)


def test_a_session_that_does_not_see_its_cluster_is_left_as_it_is() -> None:
    fake = FakeSpark(**{SHUFFLE_PARTITIONS: "8"})
    with partitions_for_slots(fake) as partitions:
        assert partitions is None and fake.conf.get(SHUFFLE_PARTITIONS, "") == "8"


def test_a_cached_shuffle_has_one_partition_per_slot_at_most_the_shuffle_partitions(eight) -> None:
    assert slot_partitions(eight) == 2
    eight.conf.set(SHUFFLE_PARTITIONS, "1")
    assert slot_partitions(eight) == 1


def test_a_cached_shuffle_has_the_shuffle_partitions_when_the_slots_are_unknown() -> None:
    assert slot_partitions(FakeSpark(**{SHUFFLE_PARTITIONS: "8"})) == 8
