"""The forecast's reference engine and its Spark twin agree on generated telemetry.

Every sum of doubles runs in the same order in both engines, so the comparison is exact (the one
differential harness); docs/forecast.md states the engines agree bit for bit.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import types as T

from quotaplane.forecast.config import ForecastSettings
from quotaplane.forecast.engine.backlog import BacklogTick, forecast_backlogs
from quotaplane.forecast.engine.replicas import ReplicaPoint
from quotaplane.forecast.engine.volumes import VolumePoint, forecast_volumes
from quotaplane.forecast.records import PARTITION_SIZES
from quotaplane.forecast.spark import backlog as spark_backlog
from quotaplane.forecast.spark import volumes as spark_volumes
from quotaplane.storage.records import VOLUMES
from tests.forecast.strategies import backlog_ticks, fleet, storage_config
from tests.support.differential import Engines, assert_engines_agree, records_frame

HORIZONS = st.sampled_from([600_000, 3_600_000, 7 * 86_400_000])
LOOKBACKS = st.sampled_from([60_000, 4 * 60_000, 86_400_000])
Case = tuple[list[VolumePoint], list[ReplicaPoint], Any, ForecastSettings, int | None]


def _at(case_at: int | None, points: list[Any], field: str) -> int:
    return case_at if case_at is not None else max(getattr(p, field) for p in points)


def reference_volumes(config: Any, case: Case) -> dict[str, list[dict[str, Any]]]:
    volumes, replicas, _, forecast, at = case
    return {"storage_forecast": [f.as_dict() | {"kind": None} for f in
                                 forecast_volumes(volumes, replicas, config, forecast, at)]}


def spark_volumes_tables(session: Any, config: Any, case: Case) -> dict[str, Any]:
    volumes, replicas, _, forecast, at = case
    v = records_frame(session, [{"ts": p.ts_ms, "cluster": p.cluster, "broker_id": p.broker_id,
                                 "log_dir": p.log_dir, "total_bytes": p.total_bytes,
                                 "available_bytes": p.available_bytes} for p in volumes], VOLUMES)
    sizes = None
    if replicas:
        rows = [{"ts": r.ts_ms, "cluster": r.cluster, "broker_id": r.broker_id, "log_dir": r.log_dir,
                 "topic": r.topic, "partition": r.partition, "size_bytes": r.size_bytes,
                 "is_leader": r.is_leader} for r in replicas]
        sizes = records_frame(session, rows, PARTITION_SIZES)
    table = spark_volumes.forecast_volumes(v, sizes, config, forecast, _at(at, volumes, "ts_ms"))
    return {"storage_forecast": table.selectExpr("CAST(NULL AS STRING) AS kind", "*")}


VOLUME_ENGINES: Engines[Any, Case] = Engines(reference_volumes, spark_volumes_tables)

CHECKS = T.StructType([T.StructField("ts_ms", T.LongType()), T.StructField("topic", T.StringType()),
                       T.StructField("namespace", T.StringType()),
                       T.StructField("backlog_size_bytes", T.LongType()),
                       T.StructField("backlog_age_seconds", T.LongType()),
                       T.StructField("size_limit", T.LongType()), T.StructField("time_limit", T.LongType())])


def reference_backlogs(forecast: ForecastSettings,
                       ticks: list[BacklogTick]) -> dict[str, list[dict[str, Any]]]:
    return {"backlog_forecast": [f.as_dict() | {"kind": None} for f in forecast_backlogs(ticks, forecast)]}


def spark_backlog_tables(session: Any, forecast: ForecastSettings,
                         ticks: list[BacklogTick]) -> dict[str, Any]:
    df = session.createDataFrame([(t.ts_ms, t.topic, t.namespace, t.backlog_size_bytes, t.backlog_age_seconds,
                                   t.size_limit, t.time_limit) for t in ticks], CHECKS)
    table = spark_backlog.forecast_backlogs(df, forecast, max(t.ts_ms for t in ticks))
    return {"backlog_forecast": table.selectExpr("CAST(NULL AS STRING) AS kind", "*")}


BACKLOG_ENGINES: Engines[ForecastSettings, list[BacklogTick]] = Engines(reference_backlogs,
                                                                        spark_backlog_tables)


@pytest.mark.spark
@settings(parent=settings.get_profile("differential"))
@given(fleet(), HORIZONS, LOOKBACKS)
def test_volume_forecasts_agree(spark, generated, horizon_ms, lookback_ms) -> None:
    volumes, replicas, config_name, window_ms, at = generated
    forecast = ForecastSettings(window_ms=window_ms, horizon_ms=horizon_ms, top=2, lookback_ms=lookback_ms)
    config = storage_config(config_name)
    assert_engines_agree(VOLUME_ENGINES, spark, config, (volumes, replicas, config, forecast, at))


@pytest.mark.spark
@settings(parent=settings.get_profile("differential"))
@given(backlog_ticks(), HORIZONS)
def test_backlog_forecasts_agree(spark, generated, horizon_ms) -> None:
    ticks, window_ms = generated
    forecast = ForecastSettings(window_ms=window_ms, horizon_ms=horizon_ms)
    assert_engines_agree(BACKLOG_ENGINES, spark, forecast, ticks)
