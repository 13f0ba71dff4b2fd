"""The realism the simulator promises, checked on small runs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from quotaplane.sim.model import DAY_MS, ERROR_REASONS, HOUR_MS, MINUTE_MS
from quotaplane.sim.rates import RateModel
from quotaplane.sim.requests import RequestGenerator
from quotaplane.sim.rng import Fields
from quotaplane.sim.run import resolve
from quotaplane.sim.scenarios import BACKFILL_CLIENT
from tests.sim.conftest import SMALL


def frame(tables: dict[str, pa.Table], kind: str) -> pd.DataFrame:
    return tables[kind].to_pandas()


@pytest.mark.parametrize("fixture", ["fleet_tables", "errors_tables", "fill_tables"])
def test_available_within_total(fixture: str, request: pytest.FixtureRequest) -> None:
    v = frame(request.getfixturevalue(fixture), "volumes")
    assert (v.available_bytes >= 0).all() and (v.available_bytes <= v.total_bytes).all()
    assert (v.total_bytes > 0).all()


def test_volumes_are_heterogeneous_and_placement_uneven() -> None:
    found, params = resolve("fleet", {**SMALL["fleet"], "topics": 200})
    model = found.build(params)
    totals = model.volumes.total_bytes
    assert len(np.unique(totals // (1 << 30))) >= 3
    t = model.topics
    np.testing.assert_allclose(t.placement.sum(axis=1), t.replication_factor)
    np.testing.assert_allclose(t.leader_share.sum(axis=1), 1.0)
    assert (t.replication_factor == 3).mean() > 0.5 and (t.replication_factor < 3).any()
    per_volume = (t.base_rate[:, None] * t.placement).sum(axis=0)
    placed = per_volume[per_volume > 0]
    assert placed.std() / placed.mean() > 0.3  # some volumes take far more bytes than others
    assert t.base_rate.max() / np.median(t.base_rate) > 5  # heavy-tailed topic rates


def test_retention_deletes_whole_segments(fleet_tables: dict[str, pa.Table]) -> None:
    v = frame(fleet_tables, "volumes").sort_values(["broker_id", "log_dir", "ts"])
    freed = v.groupby(["broker_id", "log_dir"]).available_bytes.diff()
    assert (freed >= 128 << 20).sum() > 20  # drops of at least a (small) segment


def test_daily_cycle_and_bursts() -> None:
    found, params = resolve("fleet", SMALL["fleet"])
    model = found.build(params)
    rates = RateModel(model, Fields(params.seed))
    hours = model.start_ms + np.arange(0, DAY_MS, HOUR_MS)
    shape = rates.topic_shape(hours)
    swing = shape.max(axis=0) / shape.min(axis=0)
    assert np.median(swing) > 1.2
    minutes = model.start_ms + np.arange(0, 2 * DAY_MS, 10 * MINUTE_MS)
    bursts = rates.client_bursts(minutes, rates.producers)
    assert (bursts > 1.5).any() and (bursts == 1.0).mean() > 0.9


def test_membership_changes_and_leavers_stop_being_observed(fleet_tables: dict[str, pa.Table]) -> None:
    m = frame(fleet_tables, "membership")
    v = frame(fleet_tables, "volumes")
    members = m.groupby("poll_id").broker_id.apply(frozenset)
    assert members.nunique() > 2
    last_seen = m.groupby("broker_id").poll_id.max()
    first_seen = m.groupby("broker_id").poll_id.min()
    assert (last_seen < m.poll_id.max() - 10).any(), "a broker leaves for good"
    assert (first_seen > m.poll_id.min() + 10).any(), "a broker joins later"
    observed = set(zip(v.poll_id, v.broker_id, strict=True))
    listed = set(zip(m.poll_id, m.broker_id, strict=True))
    assert observed <= listed  # no volumes of a broker that is not active


def test_collection_errors_and_inconsistent_rounds(errors_tables: dict[str, pa.Table]) -> None:
    e = frame(errors_tables, "collection_errors")
    m = frame(errors_tables, "membership")
    v = frame(errors_tables, "volumes")
    assert set(e.reason) == set(ERROR_REASONS)
    assert e.poll_id.is_unique
    assert not set(e.poll_id) & set(v.poll_id), "a failed round has no volume observations"
    cluster_errors = set(e.poll_id[e.reason == "DESCRIBE_CLUSTER_ERROR"])
    assert not cluster_errors & set(m.poll_id), "describeCluster failed: nobody is listed"
    log_dir_errors = set(e.poll_id[e.reason == "DESCRIBE_LOG_DIR_ERROR"])
    assert log_dir_errors & set(m.poll_id), "describeLogDirs failed: the active brokers are known"
    consecutive = np.diff(np.sort(e.poll_id.to_numpy()))
    assert (consecutive == 1).sum() >= 3, "failures come in runs too"
    ok_rounds = set(m.poll_id) - set(e.poll_id)
    listed = m[m.poll_id.isin(ok_rounds)]
    seen = set(zip(v.poll_id, v.broker_id, strict=True))
    missing = [(p, b) for p, b in zip(listed.poll_id, listed.broker_id, strict=True) if (p, b) not in seen]
    assert len(missing) >= 3, "rounds that list a broker but miss its log dirs"


def test_rounds_share_time_and_poll_id(fleet_tables: dict[str, pa.Table]) -> None:
    v = frame(fleet_tables, "volumes")
    m = frame(fleet_tables, "membership")
    assert (v.groupby("poll_id").ts.nunique() == 1).all()
    both = pd.concat([v[["poll_id", "ts"]], m[["poll_id", "ts"]]]).drop_duplicates()
    assert both.poll_id.is_unique
    order = both.sort_values("poll_id")
    assert order.ts.is_monotonic_increasing


def test_request_sizes_sum_to_the_modelled_rate() -> None:
    found, params = resolve("replication-fill")
    model = found.build(params)
    fields = Fields(params.seed)
    generator = RequestGenerator(model, fields)
    loader = model.clients.client_id.index(BACKFILL_CLIENT)
    minutes = np.arange((model.window_start_ms - model.start_ms) // MINUTE_MS,
                        (model.window_start_ms - model.start_ms) // MINUTE_MS + 5)
    chunk = generator._chunk(minutes)["client_requests"].to_pandas()
    sent = chunk[(chunk.client_id == BACKFILL_CLIENT) & (chunk.quota_type == "produce")]
    per_minute = sent.groupby((sent.ts_ms - model.start_ms) // MINUTE_MS).value.sum()
    begin = model.start_ms + minutes * MINUTE_MS
    rate = RateModel(model, fields).client_rates(begin + MINUTE_MS // 2, np.array([loader]))[:, 0]
    np.testing.assert_array_equal(per_minute.to_numpy(), np.floor(rate * 60.0))
    assert sent.value.max() <= params.max_request_bytes


@pytest.mark.parametrize("fixture", ["fleet_tables", "fill_tables"])
def test_topic_requests_are_the_produce_requests(fixture: str, request: pytest.FixtureRequest) -> None:
    tables = request.getfixturevalue(fixture)
    c = frame(tables, "client_requests")
    t = frame(tables, "topic_requests")
    produce = c[c.quota_type == "produce"]
    assert len(produce) == len(t)
    np.testing.assert_array_equal(produce.ts_ms.to_numpy(), t.ts_ms.to_numpy())
    np.testing.assert_array_equal(produce.value.to_numpy(), t.bytes.to_numpy())
    assert c.ts_ms.is_monotonic_increasing
    kinds = set(c.quota_type)
    assert {"produce", "fetch", "request"} <= kinds
    per_request = c[c.quota_type.isin(["produce", "fetch"])]
    assert (c.quota_type == "request").sum() == len(per_request), "each request also takes handler time"


@pytest.mark.parametrize("fixture", ["fleet_tables", "errors_tables", "fill_tables"])
def test_backlog_snapshot_invariants(fixture: str, request: pytest.FixtureRequest) -> None:
    b = frame(request.getfixturevalue(fixture), "backlog_snapshots")
    has = b.oldest_unacked_publish_ts_ms.notna()
    assert ((b.backlog_entries > 0) == has).all()
    assert ((b.backlog_size_bytes > 0) == has).all()
    assert (b.oldest_unacked_publish_ts_ms[has] <= b.ts_ms[has]).all()
    closed = b.oldest_unacked_ledger_close_ts_ms.notna()
    assert (~closed & has).any()
    assert not (closed & ~has).any()
    assert (b.oldest_unacked_ledger_close_ts_ms[closed] <= b.ts_ms[closed]).all()
    assert (b.oldest_unacked_ledger_close_ts_ms[closed] > b.oldest_unacked_publish_ts_ms[closed]).all()
    ticks = np.unique(b.ts_ms)
    assert (np.diff(ticks) == 60_000).all()
    assert (b.groupby("ts_ms").size() == b.groupby(["topic", "subscription"]).ngroups).all()


def test_stalled_and_slow_subscriptions(fill_tables: dict[str, pa.Table]) -> None:
    b = frame(fill_tables, "backlog_snapshots")
    ingest = b[(b.topic == "persistent://acme/telemetry/device-events") & (b.subscription == "ingest")]
    oldest = ingest.oldest_unacked_publish_ts_ms
    assert oldest.max() - oldest.min() <= 1, "a stalled consumer's oldest message stays"
    assert ingest.backlog_size_bytes.is_monotonic_increasing
    closes = ingest.oldest_unacked_ledger_close_ts_ms
    assert closes.notna().all() and closes.nunique() == 1  # its ledger has rolled
    slow = b[(b.topic == "persistent://acme/orders/payments-partition-0") & (b.subscription == "analytics")]
    assert slow.backlog_size_bytes.iloc[-1] > 3 * slow.backlog_size_bytes.iloc[0]
    assert slow.oldest_unacked_publish_ts_ms.is_monotonic_increasing
    age = slow.ts_ms - slow.oldest_unacked_publish_ts_ms
    assert age.iloc[-1] > age.iloc[0]
