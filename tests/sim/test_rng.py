"""Counter-based random fields: pure functions of (seed, stream, keys)."""

from __future__ import annotations

import numpy as np

from quotaplane.sim.rng import Fields, stream_id


def test_values_depend_only_on_their_coordinates() -> None:
    f = Fields(7)
    whole = f.uniform("s", np.arange(1000))
    parts = np.concatenate([f.uniform("s", np.arange(0, 400)), f.uniform("s", np.arange(400, 1000))])
    np.testing.assert_array_equal(whole, parts)
    assert f.uniform("s", 5)[0] == whole[5]
    grid = f.uniform("s", np.arange(3)[:, None], np.arange(4)[None, :])
    assert grid.shape == (3, 4)
    assert grid[2, 3] == f.uniform("s", 2, 3)[0]


def test_streams_seeds_and_keys_differ() -> None:
    a = Fields(1).uniform("a", np.arange(100))
    assert not np.array_equal(a, Fields(2).uniform("a", np.arange(100)))
    assert not np.array_equal(a, Fields(1).uniform("b", np.arange(100)))
    assert not np.array_equal(Fields(1).uniform("a", 1, 2), Fields(1).uniform("a", 2, 1))
    assert Fields(1).uniform("a", -1)[0] != Fields(1).uniform("a", 1)[0]


def test_distributions() -> None:
    f = Fields(3)
    u = f.uniform("u", np.arange(200_000))
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.005
    z = f.normal("z", np.arange(200_000))
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1.0) < 0.01
    noise = f.lognormal_mean_one("n", 0.5, np.arange(200_000))
    assert abs(noise.mean() - 1.0) < 0.01 and noise.min() > 0


def test_stream_ids_are_stable() -> None:
    assert stream_id("burst") == 0x7D3EA0B0  # CRC-32: the same in every process (unlike hash())
    assert stream_id("burst") != stream_id("bursts")
