"""The Spark transform equals the reference engine, round by round, on generated telemetry.

Each hypothesis example evaluates ~30 independent scenarios (clusters) in one Spark job and
compares every decision row exactly, in any order, with the differential harness (floats included:
both engines use the same operations).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quotaplane.storage.config import StorageConfig
from quotaplane.storage.engine import evaluate_rounds, group_rounds
from quotaplane.storage.records import COLLECTION_ERRORS, MEMBERSHIP, VOLUMES
from quotaplane.storage.spark.decisions import storage_decisions
from tests.storage.engine.helpers import cluster_config, local_config, strimzi_config
from tests.storage.spark.scenarios import (
    Telemetry,
    cluster_configs,
    local_configs,
    strimzi_configs,
    telemetry,
)
from tests.support.differential import Engines, assert_engines_agree, records_frame

pytestmark = pytest.mark.spark
SCENARIOS = 30


def _key(row: dict[str, Any]) -> tuple:
    number = row["round_window"] if row["poll_id"] is None else row["poll_id"]
    observer = -1 if row["observing_broker_id"] is None else row["observing_broker_id"]
    return (row["cluster"] or "", row["ts_ms"], row["poll_id"] is None, number, observer)


def spark_rows(spark, config: StorageConfig, t: Telemetry) -> list[dict[str, Any]]:
    frames = [records_frame(spark, rows, schema)
              for rows, schema in ((t.volumes, VOLUMES), (t.membership, MEMBERSHIP),
                                   (t.errors, COLLECTION_ERRORS))]
    rows = [r.asDict() for r in storage_decisions(config, *frames).collect()]
    for r in rows:
        assert round(r.pop("ts").timestamp() * 1000) == r["ts_ms"]
    return sorted(rows, key=_key)


def reference_rows(config: StorageConfig, t: Telemetry) -> list[dict[str, Any]]:
    return sorted(evaluate_rounds(config, group_rounds(t.volumes, t.membership, t.errors,
                                                       config.check_interval_ms)), key=_key)


ENGINES: Engines[StorageConfig, Telemetry] = Engines(
    reference=lambda config, t: {"storage_decisions": reference_rows(config, t)},
    spark=lambda spark, config, t: {"storage_decisions": spark_rows(spark, config, t)},
)


def assert_same(spark, config: StorageConfig, t: Telemetry) -> None:
    assert_engines_agree(ENGINES, spark, config, t)


@settings(parent=settings.get_profile("differential"))
@given(st.data())
def test_cluster_source_matches_the_reference(spark, data: st.DataObject) -> None:
    config = data.draw(cluster_configs())
    assert_same(spark, config, data.draw(telemetry(config, SCENARIOS)))


@settings(parent=settings.get_profile("differential"))
@given(st.data())
def test_local_source_matches_the_reference(spark, data: st.DataObject) -> None:
    config = data.draw(local_configs())
    assert_same(spark, config, data.draw(telemetry(config, SCENARIOS)))


@settings(parent=settings.get_profile("differential"))
@given(st.data())
def test_strimzi_dialect_matches_the_reference(spark, data: st.DataObject) -> None:
    config = data.draw(strimzi_configs())
    assert_same(spark, config, data.draw(telemetry(config, SCENARIOS)))


def _vol(ts: int, cluster: str, broker: int, available: int) -> dict[str, Any]:
    return {"ts": ts, "cluster": cluster, "broker_id": broker, "log_dir": "/d", "total_bytes": 1000,
            "available_bytes": available, "poll_id": None}


FIXED = {
    "cluster": cluster_config(("availableBytesBelow", "300"), ("availableBytesBelow", "100"), fallback="0.5"),
    "local": local_config(100, 900, fallback="0.5"),
    "strimzi": strimzi_config(validity="PT1M", fallback="0.0"),
}


@pytest.mark.parametrize("config", FIXED.values(), ids=FIXED.keys())
def test_errors_without_a_cluster_apply_to_every_cluster(spark, config: StorageConfig) -> None:
    t = Telemetry(volumes=[_vol(0, "a", 1, 50), _vol(0, "b", 1, 500), _vol(120_000, "a", 1, 50)],
                  errors=[{"ts": 60_000, "reason": "EXCEPTION", "cluster": None, "poll_id": None},
                          {"ts": 120_001, "reason": "SAFETY_TIMEOUT", "cluster": None, "poll_id": None}])
    assert_same(spark, config, t)


def test_errors_in_telemetry_naming_no_cluster_form_their_own_rounds(spark) -> None:
    config = FIXED["cluster"]
    t = Telemetry(errors=[{"ts": 5, "reason": "EXCEPTION", "cluster": None, "poll_id": None}])
    assert_same(spark, config, t)
    assert spark_rows(spark, config, t)[0]["cluster"] is None
