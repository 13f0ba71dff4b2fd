"""What one service exports names one cluster and one round number: a replay of the bundled example
(recorded cluster `my-cluster`, `--cluster` left at its default) labels its storage and forecast
series alike, and `/decision` gives the round number its log line gives."""

from __future__ import annotations

import io
import json
import threading

from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from quotaplane.core.policy import RunConfigs
from quotaplane.live.http import Endpoints
from quotaplane.live.metrics import LiveMetrics, LiveStatus
from quotaplane.live.service import Options, Service, input_schemas, live_policies
from quotaplane.live.sources.replay import ReplaySource, read_rounds
from quotaplane.registry import POLICIES
from quotaplane.run_command import bundled_example
from quotaplane.storage.config import load_storage_config


def test_a_replay_exports_one_cluster_and_the_logged_round_number() -> None:
    telemetry, configs = bundled_example()
    assert configs.storage is not None
    config = load_storage_config(configs.storage)
    rounds = read_rounds(telemetry, config)
    source = ReplaySource(rounds)
    loaded = {p.name: p.load_config(RunConfigs(storage=configs.storage)) for p in POLICIES if p.live}
    policies = live_policies(loaded, source.inputs)
    status = LiveStatus("live")
    log = io.StringIO()
    service = Service([source], policies, input_schemas(), status, Options(1.0, rounds=3), log=log)
    service.run()
    registry = CollectorRegistry()
    registry.register(LiveMetrics(status, [p.decider for p in policies]))
    http = Endpoints("127.0.0.1", 0, registry, status, 1.0, threading.Lock(),
                     {p.part.endpoint: None for p in policies})
    try:
        code, _, body = http.answer("/metrics")
        assert code == 200
        clusters = {(family.name, sample.labels["cluster"])
                    for family in text_string_to_metric_families(body.decode())
                    for sample in family.samples if "cluster" in sample.labels}
        names = {name for name, _ in clusters}
        assert {"quotaplane_storage_throttle_factor", "quotaplane_storage_volume_seconds_to_full"} <= names
        assert {cluster for _, cluster in clusters} == {"my-cluster"}
        last = json.loads(log.getvalue().splitlines()[-1])
        _, _, answer = http.answer("/decision")
        decision = json.loads(answer)
        assert (decision["round"], decision["cluster"]) == (last["round"], last["cluster"])
        assert (last["round"], last["cluster"]) == (3, "my-cluster")
        assert decision["poll_id"] == 2  # the recording counts its polls from 0, the service from 1
    finally:
        http.close()
