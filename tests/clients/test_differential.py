"""Reference engine vs Spark pipeline on generated telemetry: exact agreement.

Each hypothesis example holds many independent scenarios (each its own quota configuration, its
own brokers and requests), tagged by `config_id` and evaluated in one Spark job. Floats are
compared for equality: both engines sum whole units exactly and do the same double operations in
the same order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from quotaplane.clients.engine.evaluate import ClientQuotaEngine
from quotaplane.clients.engine.intervals import IntervalRow, aggregate_intervals, aggregate_standing
from quotaplane.clients.engine.settings import ClientQuotaSettings
from quotaplane.clients.engine.storage_factor import FactorTimeline, StorageDecision
from quotaplane.clients.spark.evaluate import evaluate_requests
from quotaplane.clients.spark.groups import FactorTable
from quotaplane.clients.spark.intervals import (
    KEY,
    LAST_FIELDS,
    STANDING_COLUMNS,
    interval_rows,
    standing_rows,
)
from tests.clients.scenarios import (
    Scenario,
    configs,
    decision_lists,
    decisions_frame,
    request_lists,
    settings_strategy,
)
from tests.support.differential import Engines, assert_engines_agree

REQUEST_FIELDS = ("user", "client_id", "quota_type", "ts_ms", "value", "value_units", "tag_user",
                  "tag_client_id", "recorded", "quota_limit", "quota_level", "quota_source",
                  "throttle_factor", "rate", "window_ms", "tokens", "utilisation_pct", "violated",
                  "throttled", "throttle_time_ms")
INPUT_SCHEMA = ("config_id long, ts_ms long, broker_id long, user string, client_id string, "
                "quota_type string, value double, _file long, _row long")
# The settings and the storage decisions every scenario shares.
Run = tuple[ClientQuotaSettings, list[StorageDecision]]


@st.composite
def scenario_sets(draw: st.DrawFn) -> list[Scenario]:
    count = draw(st.integers(15, 36))
    out = []
    for index in range(count):
        requests = draw(request_lists(max_size=40))
        requests = [dataclasses.replace(r, broker_id=index * 10 + r.broker_id) for r in requests]
        out.append(Scenario(draw(configs()), requests))
    return out


def spread(decisions: list[StorageDecision], count: int) -> list[StorageDecision]:
    """Cluster decisions as they are; a broker's decision for that broker of every scenario."""
    out = [d for d in decisions if d.observing_broker_id is None]
    for index in range(count):
        out += [dataclasses.replace(d, observing_broker_id=index * 10 + d.observing_broker_id)
                for d in decisions if d.observing_broker_id is not None]
    return out


def request_fields(settings_: ClientQuotaSettings) -> tuple[str, ...]:
    return (*REQUEST_FIELDS, "quota_value") if settings_.quota_value_metric else REQUEST_FIELDS


def reference_tables(run: Run, scenarios: list[Scenario]) -> dict[str, list[dict]]:
    settings_, decisions = run
    fields = request_fields(settings_)
    timeline = FactorTimeline(decisions)
    expected: dict[str, list[dict]] = {"requests": [], "intervals": [], "standing": [], "groups": []}
    for index, scenario in enumerate(scenarios):
        outcomes = ClientQuotaEngine(scenario.config, settings_, timeline).evaluate(scenario.requests)
        expected["requests"] += [{"config_id": index, "_row": position,
                                  **{name: getattr(outcome, name) for name in fields}}
                                 for position, outcome in enumerate(outcomes)]
        rows_ = aggregate_intervals(outcomes, settings_.interval_ms, settings_.quota_value_metric)
        expected["intervals"] += [{"config_id": index, **row.as_dict(settings_.quota_value_metric)}
                                  for row in rows_]
        expected["standing"] += [{"config_id": index, **row.as_dict()} for row in aggregate_standing(rows_)]
        expected["groups"] += [{"config_id": index, **row} for row in group_extras(rows_, settings_)]
    assert len(expected["requests"]) == sum(len(s.requests) for s in scenarios)
    return expected


def group_extras(rows_: list[IntervalRow], settings_: ClientQuotaSettings) -> list[dict[str, Any]]:
    """What the stage collects of each sharing group besides its standing (`standing_rows(extra=True)`):
    its last interval's gauges and its storage factor figures."""
    groups: dict[tuple[Any, ...], list[IntervalRow]] = {}
    for row in rows_:
        groups.setdefault((row.broker_id, row.quota_type, row.user, row.client_id), []).append(row)
    out = []
    for (broker_id, quota_type, user, client_id), members in groups.items():
        last = max(members, key=lambda r: r.interval_start_ms)
        below = [r for r in members if r.throttle_factor_min is not None and r.throttle_factor_min < 1.0]
        factors = [r.throttle_factor_min for r in members if r.throttle_factor_min is not None]
        out.append({"broker_id": broker_id, "quota_type": quota_type, "user": user, "client_id": client_id,
                    **{f"last_{name}": getattr(last, name) for name in LAST_FIELDS},
                    **({"last_quota_value": last.quota_value} if settings_.quota_value_metric else {}),
                    "factor_min": min(factors) if factors else None, "factor_intervals": len(below),
                    "throttled_under_factor": sum(r.throttled_requests for r in below)})
    return out


def spark_tables(spark: Any, run: Run, scenarios: list[Scenario]) -> Generator[dict[str, Any]]:
    """The scenarios tagged by `config_id`, evaluated in one Spark job."""
    settings_, decisions = run
    rows = [(index, r.ts_ms, r.broker_id, r.user, r.client_id, r.quota_type, r.value, 0, position)
            for index, scenario in enumerate(scenarios) for position, r in enumerate(scenario.requests)]
    requests = spark.createDataFrame(rows, INPUT_SCHEMA)
    factors = FactorTable.from_pandas(decisions_frame(decisions))
    configs = {index: s.config for index, s in enumerate(scenarios)}
    decided = evaluate_requests(requests, configs, settings_, factors).cache()
    intervals = interval_rows(decided, settings_.interval_ms, settings_.quota_value_metric).cache()
    assert ("quota_value" in decided.columns) == settings_.quota_value_metric
    try:
        groups = standing_rows(intervals, extra=True)
        extras = [c for c in groups.columns if c not in STANDING_COLUMNS]
        yield {"requests": decided.select("config_id", "_row", *request_fields(settings_)),
               "intervals": intervals, "standing": groups.select(*STANDING_COLUMNS),
               "groups": groups.select(*KEY, *extras)}
    finally:
        decided.unpersist()
        intervals.unpersist()


ENGINES: Engines[Run, list[Scenario]] = Engines(reference_tables, spark_tables)


@pytest.mark.spark
@given(scenario_sets(), settings_strategy(), decision_lists())
@settings(parent=settings.get_profile("differential"))
def test_reference_and_spark_agree(spark, scenarios, settings_, decisions) -> None:
    assert_engines_agree(ENGINES, spark, (settings_, spread(decisions, len(scenarios))), scenarios)


@pytest.mark.spark
def test_quota_value_column_is_absent_when_disabled(spark) -> None:
    from quotaplane.clients.engine.entities import DEFAULT, ClientQuotaConfig, QuotaEntity

    requests = spark.createDataFrame([(0, 0, 1, "u", "c", "produce", 1.0, 0, 0)], INPUT_SCHEMA)
    config = ClientQuotaConfig({QuotaEntity(DEFAULT, None): {"producer_byte_rate": 5.0}})
    out = evaluate_requests(requests, {0: config}, ClientQuotaSettings())
    assert "quota_value" not in out.columns
    assert "quota_value" not in interval_rows(out, 60_000, False).columns
    assert out.where(F.col("recorded")).count() == 1
