"""The bundled example: reproducible, small, and it shows every policy doing something.

Its central property is the spec's motivating failure: with the example's configs the deprecated
local source never throttles, while a volume crosses the cluster source's per-volume soft and hard
limits before it runs out of space.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from quotaplane.cli import main
from quotaplane.core.properties import load_properties
from quotaplane.sim.scenarios import BACKFILL_CLIENT, BACKFILL_TOPIC, FILL_BROKER, LEADER_BROKER

ROOT = Path(__file__).resolve().parents[2] / "src" / "quotaplane" / "examples" / "replication-fill"
TELEMETRY, CONFIG = ROOT / "telemetry", ROOT / "config"
STATIC = "client.quota.callback.static."


# Kinds the per-replica storage model does not change: regenerating gives the committed bytes.
UNCHANGED = ("membership", "collection_errors", "client_requests", "topic_requests", "backlog_snapshots",
             "producer_traffic")


def read(kind: str, root: Path = TELEMETRY) -> pd.DataFrame:
    parts = sorted((root / kind).glob("*.jsonl"))
    return pd.concat([pd.read_json(p, lines=True, dtype=False) for p in parts])


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("replication-fill")
    # The command documented in examples/README.md.
    assert main(["simulate", "--scenario", "replication-fill", "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module", params=["committed", "regenerated"])
def volumes(request: pytest.FixtureRequest) -> pd.DataFrame:
    """The example's volumes as committed, and as the simulator generates them now."""
    root = TELEMETRY if request.param == "committed" else request.getfixturevalue("regenerated")
    v = read("volumes", root)
    v["used"] = v.total_bytes - v.available_bytes
    v["ratio"] = v.available_bytes / v.total_bytes
    return v


def test_regenerating_gives_the_committed_bytes(regenerated: Path) -> None:
    committed = {p.relative_to(TELEMETRY): p.read_bytes() for p in TELEMETRY.rglob("*") if p.is_file()}
    fresh = {p.relative_to(regenerated): p.read_bytes() for p in regenerated.rglob("*") if p.is_file()}
    assert committed.keys() == fresh.keys()
    for name in committed:
        if name.parts[0] in UNCHANGED:
            assert hashlib.sha256(committed[name]).digest() == hashlib.sha256(fresh[name]).digest(), name
    # Volumes: the same rounds and volumes (their usage follows the per-replica storage model).
    keys = ["ts", "broker_id", "log_dir", "poll_id"]
    assert read("volumes")[keys].equals(read("volumes", regenerated)[keys])
    old, new = (json.loads(m) for m in (committed[Path("manifest.json")], fresh[Path("manifest.json")]))
    new["arguments"].pop("partition_interval_seconds", None)
    old["arguments"].pop("partition_interval_seconds", None)
    assert old == new
    command = "quotaplane simulate --scenario replication-fill --out examples/replication-fill/telemetry"
    assert command in (ROOT.parent / "README.md").read_text()


def test_small_and_readable() -> None:
    size = sum(p.stat().st_size for p in ROOT.rglob("*") if p.is_file())
    assert size < 3_000_000
    manifest = json.loads((TELEMETRY / "manifest.json").read_text())
    assert manifest["format"] == "jsonl"
    assert manifest["arguments"]["brokers"] == 6 and manifest["arguments"]["log_dirs"] == 2
    for kind in ("client_requests", "topic_requests", "backlog_snapshots", "producer_traffic"):
        assert 100 < manifest["rows"][kind] < 30_000


def test_local_source_never_throttles_while_a_volume_crosses_soft_and_hard(volumes: pd.DataFrame) -> None:
    local = load_properties(CONFIG / "storage-local.properties")
    cluster = load_properties(CONFIG / "storage-cluster.properties")
    assert local[STATIC + "storage.volume.source"] == "local"
    assert cluster[STATIC + "storage.volume.source"] == "cluster"
    legacy_soft = int(local[STATIC + "storage.soft"])
    soft_ratio = float(cluster[STATIC + "storage.perVolumeLimit.availableRatioBelow.soft"])
    hard_bytes = int(cluster[STATIC + "storage.perVolumeLimit.availableBytesBelow.hard"])
    # The local source: each broker sums the used bytes of its own volumes (strictly above soft throttles).
    aggregate = volumes.groupby(["poll_id", "broker_id"]).used.sum()
    assert aggregate.max() < legacy_soft
    # The cluster source: broker 2's last log dir passes soft, then hard, then fills up.
    filling = volumes[(volumes.broker_id == FILL_BROKER) & (volumes.log_dir == volumes.log_dir.max())]
    filling = filling.sort_values("ts")
    soft_at = filling.ts[filling.ratio <= soft_ratio].min()
    hard_at = filling.ts[filling.available_bytes <= hard_bytes].min()
    full_at = filling.ts[filling.available_bytes == 0].min()
    assert filling.ts.min() < soft_at < hard_at < full_at <= filling.ts.max()
    assert (aggregate.xs(FILL_BROKER, level="broker_id") < legacy_soft).all()
    # Every other volume stays healthy, broker 1 (the leader of the filling topic) included.
    others = volumes[~((volumes.broker_id == FILL_BROKER) & (volumes.log_dir == volumes.log_dir.max()))]
    assert others.ratio.min() > soft_ratio * 2 and others.available_bytes.min() > 2 * hard_bytes
    assert (others[others.broker_id == LEADER_BROKER].ratio > 0.4).all()


def throttle_factor(volumes: pd.DataFrame) -> pd.Series:
    """The cluster source's factor per round, from the filling volume (every other volume is far
    from its limits): the linear ramp from 1 at the soft threshold to 0 at the hard one."""
    cluster = load_properties(CONFIG / "storage-cluster.properties")
    filling = volumes[(volumes.broker_id == FILL_BROKER) & (volumes.log_dir == volumes.log_dir.max())]
    soft = float(cluster[STATIC + "storage.perVolumeLimit.availableRatioBelow.soft"]) * filling.total_bytes
    hard = float(cluster[STATIC + "storage.perVolumeLimit.availableBytesBelow.hard"])
    ramp = np.clip((filling.available_bytes - hard) / (soft - hard), 0.0, 1.0)
    return pd.Series(ramp.to_numpy(), index=filling.ts.to_numpy())


def test_clients_over_quota_and_the_storage_factor(volumes: pd.DataFrame) -> None:
    requests = read("client_requests")
    quotas = json.loads((CONFIG / "client-quotas.json").read_text())
    named = {(q["entity"].get("user"), q["entity"].get("client-id")) for q in quotas}
    users, clients = set(requests.user), set(requests.client_id)
    assert ("<default>", None) in named  # every client is covered
    for user, client in named:
        assert user in users | {None, "<default>"} and client in clients | {None, "<default>"}

    def limit(user: str | None, client: str | None, key: str) -> float:
        return next(q["quotas"][key] for q in quotas
                    if (q["entity"].get("user"), q["entity"].get("client-id")) == (user, client))

    produce = requests[requests.quota_type == "produce"]
    minute = (produce.ts_ms // 60_000).rename("minute")
    per_minute = produce.groupby(["client_id", "broker_id", minute]).value.sum() / 60.0
    loader = per_minute.loc[BACKFILL_CLIENT]
    loader_quota = limit("svc-replay", None, "producer_byte_rate")
    factor = throttle_factor(volumes)
    first, last = requests.ts_ms.min() - 300_000, requests.ts_ms.max()  # the round in force at the start
    in_window = factor[(factor.index >= first) & (factor.index <= last)]
    assert loader.median() < loader_quota  # within its quota on its own...
    assert loader.median() > loader_quota * in_window.max()  # ...but not once storage throttles
    assert in_window.min() > 0.2 and in_window.max() < 0.8
    burst = per_minute.loc["pricing.changes-producer-0"].max()
    assert burst > 1.5 * limit("svc-pricing", "pricing.changes-producer-0", "producer_byte_rate")
    mutation = requests.quota_type == "controller_mutation"
    mutations = requests[mutation & (requests.client_id == "provisioner-0")]
    per_second = mutations.groupby(mutations.ts_ms // 60_000).value.sum() / 60.0
    assert per_second.max() > 2 * limit(None, "provisioner-0", "controller_mutation_rate")


def test_a_topic_over_its_threshold_on_a_broker_over_its_total() -> None:
    config = load_properties(CONFIG / "topics.properties")
    total = int(config["total.bytes.in.per.sec.threshold"])
    explicit = {k.split(".", 1)[1].rsplit(".bytes.in.per.sec.threshold", 1)[0]: int(v)
                for k, v in config.items() if k.startswith("topic.")}
    assert sum(explicit.values()) < total
    requests = read("topic_requests")
    assert set(explicit) <= set(requests.topic)
    seconds = (requests.ts_ms.max() - requests.ts_ms.min()) / 1000.0
    per_broker = requests.groupby("broker_id").bytes.sum() / seconds
    assert per_broker[LEADER_BROKER] > 1.5 * total
    assert (per_broker.drop(LEADER_BROKER) < total).all()
    backfill = requests[requests.topic == BACKFILL_TOPIC]
    assert set(backfill.broker_id) == {LEADER_BROKER}
    assert backfill.bytes.sum() / seconds > 2 * explicit[BACKFILL_TOPIC]
    assert requests.bytes.max() <= int(config["message.max.bytes"])


def test_backlogs_over_size_and_over_age() -> None:
    policies = json.loads((CONFIG / "backlog-policies.json").read_text())
    assert not policies["broker"]["preciseTimeBasedBacklogQuotaCheck"]
    snapshots = read("backlog_snapshots")
    topics = set(snapshots.topic) | set(snapshots.partitioned_topic.dropna())
    namespaces = {t.split("/")[2] + "/" + t.split("/")[3] for t in topics}
    assert set(policies["topics"]) <= topics and set(policies["namespaces"]) <= namespaces
    orders = snapshots[snapshots.topic.str.startswith("persistent://acme/orders/payments")]
    size_limit = policies["namespaces"]["acme/orders"]["destination_storage"]["limitSize"]
    assert (orders.backlog_size_bytes >= size_limit).any()
    assert (orders.backlog_size_bytes.iloc[:11] < size_limit).all()  # it grows past the limit
    events = snapshots[snapshots.topic == "persistent://acme/telemetry/device-events"]
    quotas = policies["topics"]["persistent://acme/telemetry/device-events"]
    estimated_age_s = (events.ts_ms - events.oldest_unacked_ledger_close_ts_ms) / 1000.0
    assert (estimated_age_s > quotas["message_age"]["limitTime"]).any()
    assert (events.backlog_size_bytes < quotas["destination_storage"]["limitSize"]).all()


def test_producers_get_notices_of_every_reason_and_receipt(capsys: pytest.CaptureFixture[str]) -> None:
    from quotaplane.notices.engine.evaluate import RECEIPTS
    from quotaplane.notices.protocol import Reason

    traffic = read("producer_traffic")
    window = json.loads((TELEMETRY / "manifest.json").read_text())["window_ms"]
    assert window[0] <= traffic.ts_ms.min() and traffic.ts_ms.max() < window[1]
    snapshots = read("backlog_snapshots")
    assert set(traffic.topic) <= set(snapshots.topic)  # the backlog snapshots' Pulsar topics
    assert traffic.groupby("topic").connection_id.nunique().max() > 1  # topics shared by connections
    # The command documented in examples/README.md (the reference engine).
    capsys.readouterr()
    assert main(["notices", "evaluate", "--config", str(CONFIG / "notices.properties"),
                 "--traffic", str(TELEMETRY / "producer_traffic")]) == 0
    notices = pd.read_json(io.StringIO(capsys.readouterr().out), lines=True, dtype=False)
    assert set(notices.reason) == {r.name for r in Reason}
    assert set(notices.receipt) == set(RECEIPTS)
    # Which topics breach which limit, on which connections (examples/README.md).
    notices["application"] = notices.connection_id.str.split("/").str[0]
    notices["partitioned"] = notices.topic.str.replace(r"-partition-\d+$", "", regex=True)
    expected = {
        "ResourceGroupProduceQuotaExceeded": ({"persistent://acme/orders/payments"},
                                              {"payments-api", "settlement-batch"}),
        "TopicProduceQuotaExceeded": ({"persistent://acme/telemetry/device-events"},
                                      {"device-gateway", "log-forwarder"}),
        "BrokerProduceQuotaExceeded": ({"persistent://beta/logs/app-logs"}, {"log-forwarder"}),
        "ConnectionPendingMessagesBreach": ({"persistent://acme/orders/payments"}, {"settlement-batch"}),
        "MessageBufferSizeBreach": ({"persistent://beta/logs/app-logs"}, {"device-gateway"}),
    }
    for reason, (topics, applications) in expected.items():
        these = notices[notices.reason == reason]
        assert (set(these.partitioned), set(these.application)) == (topics, applications), reason
    # PIP-385 spares the connections of producers that answer in time; pauses stall innocent topics.
    assert notices.connection_paused_ms.sum() < notices.connection_paused_ms_without_notices.sum()
    assert (notices[notices.receipt == "in_time"].connection_paused_ms_without_notices > 0).any()
    assert notices.stalled_topics.sum() < notices.stalled_topics_without_notices.sum()


def test_configs_load() -> None:
    from quotaplane.backlog import config as backlog
    from quotaplane.clients import config as clients
    from quotaplane.notices import config as notices
    from quotaplane.storage import config as storage
    from quotaplane.topics import config as topics

    assert storage.load_storage_config(CONFIG / "storage-cluster.properties").source == "cluster"
    assert storage.load_storage_config(CONFIG / "storage-local.properties").source == "local"
    assert clients.load_client_quotas(CONFIG / "client-quotas.json").quotas
    assert topics.load_topics_config(CONFIG / "topics.properties").total_threshold > 0
    assert backlog.load_backlog_policies(CONFIG / "backlog-policies.json").topics
    assert notices.load_notice_config(CONFIG / "notices.properties").group_topics


@pytest.mark.spark
def test_every_row_of_the_example_is_used(spark: object) -> None:
    from quotaplane.core.policy import find_input
    from quotaplane.core.spark.readers import read_telemetry
    from quotaplane.registry import all_inputs

    schemas = {i.name: i.schema for i in all_inputs()}
    manifest = json.loads((TELEMETRY / "manifest.json").read_text())
    required = {i.name for i in all_inputs() if i.required}
    for kind, schema in schemas.items():
        path = find_input(TELEMETRY, kind)
        if path is None and kind not in required:
            continue  # an optional input the example does not carry (partition_sizes)
        assert path is not None, kind
        counts = read_telemetry(spark, schema, path).counts()  # type: ignore[arg-type]
        assert (counts.read, counts.quarantined) == (manifest["rows"][kind], 0), kind
