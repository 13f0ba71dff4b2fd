"""`partition_sizes`: one row per replica as DescribeLogDirs reports it, consistent with `volumes`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from quotaplane.cli import main
from quotaplane.sim.model import ClusterModel
from quotaplane.sim.rates import RateModel
from quotaplane.sim.retention import ReplicaSizes
from quotaplane.sim.rng import Fields
from quotaplane.sim.run import resolve
from quotaplane.sim.scenarios import RAMP_TOPIC
from tests.sim.conftest import FORECAST_SCENARIOS, SMALL, tables

GIB = 1 << 30


def model_of(scenario: str, small: bool = True) -> ClusterModel:
    found, params = resolve(scenario, SMALL[scenario] if small else {})
    return found.build(params)


def with_volume_index(frame: pd.DataFrame, model: ClusterModel) -> pd.DataFrame:
    v = model.volumes
    index = {(int(model.brokers.ids[b]), d): i
             for i, (b, d) in enumerate(zip(v.broker, v.log_dir, strict=True))}
    return frame.assign(volume=[index[k] for k in zip(frame.broker_id, frame.log_dir, strict=True)])


def check_consistency(tabs: dict[str, pa.Table], model: ClusterModel) -> int:
    """Replica sizes sum exactly to each volume's used bytes less its non-Kafka usage; rows exist for
    exactly the observed volumes with space left at partition rounds. Returns the rounds compared."""
    v = with_volume_index(tabs["volumes"].to_pandas(), model)
    p = tabs["partition_sizes"].to_pandas()
    kafka = p.groupby(["ts", "broker_id", "log_dir"]).size_bytes.sum().rename("kafka").reset_index()
    joined = v.merge(kafka, on=["ts", "broker_id", "log_dir"], how="left")
    every = model.partition_interval_ms // model.interval_ms
    rounds = (joined.ts - model.start_ms) // model.interval_ms
    placed = np.bincount(model.topics.replicas.volume, minlength=len(model.volumes.log_dir)) > 0
    expected = (rounds % every == 0) & (joined.available_bytes > 0) & placed[joined.volume]
    assert (joined.kafka.notna() == expected).all()
    listed = joined[joined.kafka.notna()]
    base = model.volumes.base_used_bytes[listed.volume]
    np.testing.assert_array_equal(listed.total_bytes - listed.available_bytes - base,
                                  listed.kafka.astype(np.int64))
    assert (model.volumes.base_used_bytes >= 0).all()
    assert len(p.merge(v[["ts", "broker_id", "log_dir"]], how="inner")) == len(p)  # only observed volumes
    return len(listed)


@pytest.mark.parametrize("scenario", sorted(SMALL))
def test_replica_sizes_sum_to_the_volume_usage(scenario: str) -> None:
    assert check_consistency(tables(scenario), model_of(scenario)) > 50


@pytest.mark.parametrize("scenario", FORECAST_SCENARIOS)
def test_forecast_scenarios_are_consistent(scenario: str, forecast_tables: dict) -> None:
    assert check_consistency(forecast_tables[scenario], model_of(scenario, small=False)) > 1000


def test_rows_are_the_replicas_at_partition_rounds(fleet_tables: dict[str, pa.Table]) -> None:
    model = model_of("fleet")
    p = fleet_tables["partition_sizes"].to_pandas()
    rounds = (p.ts - model.start_ms) // model.interval_ms
    assert (rounds % (model.partition_interval_ms // model.interval_ms) == 0).all()
    assert (p.size_bytes >= 0).all() and (p.partition >= 0).all()
    r, t = model.topics.replicas, model.topics
    replicas = pd.DataFrame({"topic": np.array(t.names)[r.topic], "partition": r.partition,
                             "volume": r.volume, "leader": r.leader})
    seen = with_volume_index(p, model)[["topic", "partition", "volume", "is_leader"]].drop_duplicates()
    known = seen.merge(replicas, on=["topic", "partition", "volume"])
    assert len(known) == len(seen), "every row is a replica of the model"
    assert (known.is_leader == known.leader).all(), "the first replica leads"
    leaders = p.groupby(["ts", "topic", "partition"]).is_leader.sum()
    assert leaders.max() == 1
    created = dict(zip(t.names, t.created_ms, strict=True))
    first = p.groupby("topic").ts.min()
    assert all(first[name] >= created[name] for name in first.index), "no rows before a topic exists"
    assert p.groupby(["ts", "topic", "partition"]).size().max() <= t.replication_factor.max()


def test_full_volumes_list_no_partitions(forecast_tables: dict) -> None:
    tabs = forecast_tables["linear-fill"]
    v = tabs["volumes"].to_pandas()
    full = v[v.available_bytes == 0]
    assert len(full) > 0
    p = tabs["partition_sizes"].to_pandas()
    assert p.merge(full[["ts", "broker_id", "log_dir"]]).empty


def test_model_keeps_replicas_behind_the_placement() -> None:
    model = model_of("fleet")
    t = model.topics
    np.testing.assert_allclose(t.replicas.placement(len(t), len(model.volumes.log_dir)), t.placement)
    assert len(t.replicas) == int((t.partitions * t.replication_factor).sum())
    assert t.replicas.leader.sum() == t.partitions.sum()
    pairs = pd.DataFrame({"t": t.replicas.topic, "p": t.replicas.partition,
                          "b": model.volumes.broker[t.replicas.volume]})
    assert not pairs.duplicated().any(), "a partition's replicas are on distinct brokers"


def sorted_sizes(tabs: dict[str, pa.Table]) -> pd.DataFrame:
    frame = tabs["partition_sizes"].to_pandas()
    return frame.sort_values(["broker_id", "log_dir", "topic", "partition", "ts"])


def test_retention_deletes_whole_segments_of_a_replica(forecast_tables: dict) -> None:
    p = sorted_sizes(forecast_tables["retention-steady"])
    diff = p.groupby(["broker_id", "log_dir", "topic", "partition"]).size_bytes.diff().dropna()
    drops = diff[diff < 0].astype(np.int64)
    assert len(drops) > 100, "a sawtooth: replicas drop at retention checks"
    # A drop is what was written meanwhile (mostly far less than a segment) less whole segments.
    assert (drops <= -GIB // 4).all() and ((drops % GIB) < GIB // 4).mean() > 0.95


def test_deletes_are_whole_segments_at_retention_checks() -> None:
    model = model_of("retention-steady", small=False)
    rates = RateModel(model, Fields(1))
    sizes = ReplicaSizes(model, rates.expected_burst, Fields(1))
    rounds = np.arange(model.rounds)
    writes = sizes.writes(rounds, rates.topic_rates(model.start_ms + rounds * model.interval_ms, rounds))
    got = sizes.step(rounds, writes)
    deleted = sizes.initial[None, :] + np.cumsum(writes, axis=0) - got
    segment = model.topics.segment_bytes[sizes.topic]
    assert (deleted % segment == 0).all() and (deleted >= 0).all() and (got >= 0).all()
    changed = np.flatnonzero((np.diff(deleted, axis=0) != 0).any(axis=1)) + 1
    assert len(changed) > 10
    assert ((changed * model.interval_ms) % model.retention_check_ms == 0).all(), "only at retention checks"


def test_retention_steady_volumes_hold_their_level(forecast_tables: dict) -> None:
    v = forecast_tables["retention-steady"]["volumes"].to_pandas()
    ratio = v.available_bytes / v.total_bytes
    assert ratio.min() > 0.5, "no volume crosses 50 % available"
    by_volume = ratio.groupby([v.broker_id, v.log_dir])
    assert (by_volume.max() - by_volume.min()).max() < 0.08
    first, last = by_volume.first(), by_volume.last()
    assert (last - first).abs().max() < 0.03
    freed = v.sort_values("ts").groupby(["broker_id", "log_dir"]).available_bytes.diff()
    assert (freed >= 0.9 * GIB).sum() > 20, "segment-sized drops show on the volumes"


def test_linear_fill_crosses_the_limits(forecast_tables: dict) -> None:
    tabs = forecast_tables["linear-fill"]
    v = tabs["volumes"].to_pandas()
    ratio = (v.available_bytes / v.total_bytes).groupby([v.broker_id, v.log_dir])
    assert (ratio.first() > 0.5).all()
    lowest = ratio.min()
    assert (lowest < 0.5).sum() >= 6 and (lowest < 0.35).sum() >= 4 and (lowest == 0).sum() >= 2
    p = sorted_sizes(tabs)
    grows = p.groupby(["broker_id", "log_dir", "topic", "partition"]).size_bytes.diff().dropna()
    assert (grows >= 0).all(), "no time retention: nothing is ever deleted"
    # Usage grows linearly while there is space.
    for _, one in v[v.available_bytes > 0].groupby(["broker_id", "log_dir"]):
        used = (one.total_bytes - one.available_bytes).to_numpy(dtype=float)
        assert np.corrcoef(one.ts.to_numpy(dtype=float), used)[0, 1] > 0.99


def test_accelerating_topic_fills_its_volumes_late(forecast_tables: dict) -> None:
    model = model_of("accelerating-topic", small=False)
    tabs = forecast_tables["accelerating-topic"]
    v = with_volume_index(tabs["volumes"].to_pandas(), model)
    topic = model.topics.names.index(RAMP_TOPIC)
    holding = set(np.flatnonzero(model.topics.placement[topic] > 0))
    assert len({int(model.volumes.broker[i]) for i in holding}) == 3
    span = model.end_ms - model.start_ms
    v["ratio"] = v.available_bytes / v.total_bytes
    ramp = v[v.volume.isin(holding)]
    others = v[~v.volume.isin(holding)]
    assert others.ratio.min() > 0.5
    assert (ramp.groupby("volume").ratio.first() > 0.5).all()
    crossed = ramp[ramp.ratio < 0.35].groupby("volume").ts.min()
    assert len(crossed) >= 3 and crossed.min() > model.start_ms + 0.5 * span
    full = ramp[ramp.available_bytes == 0].ts.min()
    assert model.start_ms + 0.8 * span < full < model.end_ms
    # It accelerates: the topic's bytes grow faster and faster (despite retention).
    p = tabs["partition_sizes"].to_pandas()
    total = p[p.topic == RAMP_TOPIC].groupby("ts").size_bytes.sum()
    thirds = np.array_split(total.to_numpy(), 3)
    growth = [part[-1] - part[0] for part in thirds]
    assert growth[2] > 2 * growth[1] > 0


def test_ramp_multiplies_the_topic_rate() -> None:
    model = model_of("accelerating-topic", small=False)
    topic = model.topics.names.index(RAMP_TOPIC)
    (ramp,) = model.topics.ramps
    rates = RateModel(model, Fields(1))
    ts = np.array([model.start_ms, ramp.start_ms, model.end_ms])
    shape = rates.topic_shape(ts)[:, topic]
    assert shape[0] == shape[1] and shape[2] == pytest.approx(8 * shape[1])


def test_retention_history_is_bounded() -> None:
    found, params = resolve("fleet", {**SMALL["fleet"], "days": 9.0, "interval_seconds": 300})
    model = found.build(params)
    sizes = ReplicaSizes(model, RateModel(model, Fields(1)).expected_burst, Fields(1))
    chunk = 50
    for r0 in range(0, model.rounds, chunk):
        rounds = np.arange(r0, min(model.rounds, r0 + chunk))
        sizes.step(rounds, np.ones((len(rounds), len(sizes)), dtype=np.int64))
        for c in sizes.classes:
            assert len(c.history) <= c.ticks + 2, "only one retention of checks is kept"
    assert max(c.ticks for c in sizes.classes) == 7 * 288


def test_partition_interval_is_validated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--scenario", "fleet", "--out", str(tmp_path / "a"), "--interval-seconds", "60",
                 "--partition-interval-seconds", "90"]) == 2
    assert "--partition-interval-seconds=90: must be a multiple of --interval-seconds (60)" in \
        capsys.readouterr().err
    assert main(["simulate", "--scenario", "fleet", "--out", str(tmp_path / "b"),
                 "--partition-interval-seconds", "0"]) == 2
    assert "--partition-interval-seconds=0: must be in 1..31622400" in capsys.readouterr().err


def test_kinds_and_interval_options(tmp_path: Path) -> None:
    assert main(["simulate", "--scenario", "retention-steady", "--out", str(tmp_path), "--days", "0.1",
                 "--partition-interval-seconds", "600", "--kinds", "partition_sizes,volumes",
                 "--format", "parquet"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json", "partition_sizes", "volumes"]
    p = pd.read_parquet(tmp_path / "partition_sizes")
    ticks = np.unique(p.ts)
    assert 13 <= len(ticks) <= 15  # rounds 0, 10, ..., 140 of 144 (a failed round has no rows)
    assert (np.rint(np.diff(ticks) / 600_000) * 600_000 - np.diff(ticks) < 3_000).all()
    assert p.is_leader.dtype == bool


def test_list_names_the_forecast_scenarios(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--list"]) == 0
    out = capsys.readouterr().out
    for name in FORECAST_SCENARIOS:
        assert f"{name}: " in out
