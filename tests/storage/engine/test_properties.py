"""Properties of one evaluation: factor in [0, 1]; less space or another volume never raises it;
the result does not depend on input order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from quotaplane.storage.config import StorageConfig
from quotaplane.storage.engine import Volume, evaluate_cluster, evaluate_local
from tests.storage.engine.helpers import cluster_config, local_config

KINDS = ("availableBytesBelow", "availableRatioBelow", "usedBytesAbove")


@st.composite
def configs(draw: st.DrawFn) -> StorageConfig:
    def limit() -> tuple[str, str]:
        kind = draw(st.sampled_from(KINDS))
        if kind == "availableRatioBelow":
            return kind, repr(draw(st.sampled_from([0.0, 0.01, 0.1, 0.25, 0.5, 1.0])))
        return kind, str(draw(st.integers(0, 2_000)))

    soft = draw(st.none() | st.builds(limit))
    return cluster_config(soft, limit())


@st.composite
def volumes(draw: st.DrawFn, min_size: int = 0) -> list[Volume]:
    keys = draw(st.lists(st.tuples(st.integers(1, 5), st.sampled_from(["/a", "/b"])), unique=True,
                         min_size=min_size, max_size=8))
    out = []
    for broker, log_dir in keys:
        total = draw(st.sampled_from([0, 1, 100, 1000, 1999, 10**12]))
        out.append(Volume(broker, log_dir, total, draw(st.integers(0, total))))
    return out


@given(configs(), volumes())
def test_factor_is_between_zero_and_one(config: StorageConfig, vols: list[Volume]) -> None:
    d = evaluate_cluster(config, vols)
    assert 0.0 <= d.throttle_factor <= 1.0
    assert all(0.0 <= a.factor <= 1.0 for a in d.assessments)


@given(configs(), volumes(min_size=1), st.data())
def test_less_available_space_never_raises_the_factor(config: StorageConfig, vols: list[Volume],
                                                      data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(vols) - 1))
    v = vols[i]
    smaller = Volume(v.broker_id, v.log_dir, v.total_bytes, data.draw(st.integers(0, v.available_bytes)))
    fewer = [*vols[:i], smaller, *vols[i + 1:]]
    assert evaluate_cluster(config, fewer).throttle_factor <= evaluate_cluster(config, vols).throttle_factor


@given(configs(), volumes(min_size=1))
def test_adding_a_volume_never_raises_the_factor(config: StorageConfig, vols: list[Volume]) -> None:
    fewer = evaluate_cluster(config, vols[1:])
    assert evaluate_cluster(config, vols).throttle_factor <= fewer.throttle_factor


@given(configs(), volumes(), st.randoms(use_true_random=False))
def test_result_does_not_depend_on_input_order(config: StorageConfig, vols: list[Volume], rnd) -> None:
    shuffled = list(vols)
    rnd.shuffle(shuffled)
    assert evaluate_cluster(config, shuffled) == evaluate_cluster(config, vols)


@given(st.integers(0, 3000), st.integers(0, 3000), volumes(min_size=1), st.data())
def test_local_source_properties(soft: int, hard: int, vols: list[Volume], data: st.DataObject) -> None:
    config = local_config(soft, hard)
    broker = vols[0].broker_id
    d = evaluate_local(config, vols, broker)
    assert 0.0 <= d.throttle_factor <= 1.0
    v = vols[0]
    smaller = Volume(v.broker_id, v.log_dir, v.total_bytes, data.draw(st.integers(0, v.available_bytes)))
    assert evaluate_local(config, [smaller, *vols[1:]], broker).throttle_factor <= d.throttle_factor
    assert evaluate_local(config, list(reversed(vols)), broker) == d
