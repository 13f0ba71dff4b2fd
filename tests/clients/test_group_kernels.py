"""The Spark engine's per-group code (numpy kernels, no Spark) against the reference engine.

Many generated examples run here cheaply; the Spark differential test then checks the wiring
(resolution joins, grouping, aggregation) on fewer, larger jobs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quotaplane.clients.engine import kernels
from quotaplane.clients.engine.evaluate import ClientQuotaEngine, ClientRequest
from quotaplane.clients.engine.quota_types import QUOTA_TYPES
from quotaplane.clients.engine.resolution import QuotaResolver
from quotaplane.clients.engine.settings import ClientQuotaSettings
from quotaplane.clients.engine.storage_factor import FactorTimeline, StorageDecision
from quotaplane.clients.spark.groups import FactorTable, decider
from quotaplane.core.javamath import long_to_int, math_round
from tests.clients.scenarios import (
    configs,
    decision_lists,
    decisions_frame,
    request_lists,
    same,
    settings_strategy,
)

COMPARED = ("tag_user", "tag_client_id", "value_units", "quota_limit", "quota_level", "quota_source",
            "throttle_factor", "rate", "window_ms", "tokens", "utilisation_pct", "violated", "throttled",
            "throttle_time_ms")


def group_function(settings: ClientQuotaSettings,
                   factors: FactorTable) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """`decider` over a pandas frame of one config, broker and type (`tag_id`, `ts_ms`, `value`,
    `base_limit`, `quota_level`, `_file`, `_row`, ...), in any order, sorted and answered as the
    stage's partition function does (`quotaplane.clients.spark.partition`)."""
    decide = decider(settings, factors)

    def evaluate_groups(pdf: pd.DataFrame) -> pd.DataFrame:
        columns = {name: pdf[name].to_numpy() for name in pdf.columns}
        order = np.lexsort((columns["_row"], columns["_file"], columns["ts_ms"], columns["tag_id"]))
        columns = {name: array[order] for name, array in columns.items()}
        quota_type = QUOTA_TYPES[int(columns["type_code"][0])]
        t = columns["ts_ms"].astype(np.int64)
        value = columns["value"].astype(np.float64)
        d = decide(quota_type, int(columns["broker_id"][0]), t, value,
                   columns["base_limit"].astype(np.float64), columns["tag_id"])
        level = columns["quota_level"].astype(np.int64)
        r = d.result
        return pd.DataFrame({
            "config_id": columns["config_id"], "broker_id": columns["broker_id"],
            "type_code": columns["type_code"], "key_id": columns["key_id"], "ts_ms": t, "value": value,
            "value_units": d.units, "quota_limit": d.limit,
            "quota_level": np.where(level > 0, level, np.nan),
            "source_code": d.source.astype(np.int32), "throttle_factor": d.factor,
            "rate": r.rate, "window_ms": r.window_ms, "tokens": r.tokens,
            "utilisation_pct": kernels.utilisation(r.rate, d.limit),
            "violated": r.violated, "throttled": r.throttle_ms > 0,
            "throttle_time_ms": r.throttle_ms.astype(np.int32),
            "seq": d.seq, "_file": columns["_file"], "_row": columns["_row"],
        }, copy=False)

    return evaluate_groups


def run_groups(config, settings_: ClientQuotaSettings, requests: list[ClientRequest],
               decisions: list[StorageDecision]) -> dict[int, dict[str, object]]:
    """Resolve with the reference resolver, then evaluate each recorded group with the group code."""
    resolver = QuotaResolver(config)
    rows = []
    tag_ids: dict[tuple[str, str, str], int] = {}
    for index, r in enumerate(requests):
        tags, resolved = resolver.resolve(r.quota_type, r.user, r.client_id)
        recorded = resolver.enabled(r.quota_type) or (
            r.quota_type == "produce" and settings_.storage_combined)
        tag_id = tag_ids.setdefault((r.quota_type, tags.user, tags.client_id), len(tag_ids))
        rows.append({"config_id": 0, "broker_id": r.broker_id, "type_code": QUOTA_TYPES.index(r.quota_type),
                     "tag_id": tag_id, "key_id": index, "ts_ms": r.ts_ms, "value": r.value,
                     "recorded": recorded, "base_limit": np.nan if resolved.limit is None else resolved.limit,
                     "quota_level": resolved.level or 0, "_file": 0, "_row": index,
                     "tag_user": tags.user, "tag_client_id": tags.client_id})
    frame = pd.DataFrame(rows)
    fn = group_function(settings_, FactorTable.from_pandas(decisions_frame(decisions)))
    out: dict[int, dict[str, object]] = {}
    if frame.empty:
        return out
    inputs = ["config_id", "broker_id", "type_code", "tag_id", "key_id", "ts_ms", "value", "base_limit",
              "quota_level", "_file", "_row"]
    recorded = frame[frame["recorded"]]
    # one call per broker and type, as a bucket holding several sharing groups would be
    for _, group in recorded.groupby(["broker_id", "type_code"]):
        result = fn(group[inputs].reset_index(drop=True))
        for record in result.to_dict("records"):
            source = record.pop("source_code")
            record["quota_source"] = (None, "client", "static")[source]
            record["tag_user"] = frame.at[int(record["_row"]), "tag_user"]
            record["tag_client_id"] = frame.at[int(record["_row"]), "tag_client_id"]
            out[int(record["_row"])] = record
    return out


def _py(value: object) -> object:
    if value is None or value is pd.NA:
        return None
    if isinstance(value, float) and np.isnan(value):
        return None
    if isinstance(value, np.generic):
        return value.item()
    return value


def check_agree(config, settings_, requests, decisions) -> None:
    expected = ClientQuotaEngine(config, settings_, FactorTimeline(decisions)).evaluate(requests)
    got = run_groups(config, settings_, requests, decisions)
    for index, outcome in enumerate(expected):
        if not outcome.recorded:
            assert index not in got
            continue
        row = got[index]
        for name in COMPARED:
            a, b = getattr(outcome, name), _py(row[name])
            assert same(a, b), (index, name, a, b, outcome)


@given(configs(), settings_strategy(), request_lists(max_size=60), decision_lists())
@settings(parent=settings.get_profile("kernel"))
def test_group_code_agrees_with_the_reference(config, settings_, requests, decisions) -> None:
    check_agree(config, settings_, requests, decisions)


@given(settings_strategy(), st.lists(st.sampled_from((0, 0, 1, 5, 400, 999, 1000, 1001, 4000, 30_000)),
                                     min_size=1, max_size=200),
       st.lists(st.sampled_from((0, 100, 500, 5000, 40_000)), min_size=200, max_size=200),
       st.sampled_from((1.0, 100.0, 700.0, 5000.0)))
@settings(parent=settings.get_profile("kernel"))
def test_long_single_groups_agree(settings_, gaps, values, bound) -> None:
    """Busy sharing groups (three users) per type: long runs through many samples, purges and
    unrecords, several groups per call."""
    from quotaplane.clients.engine.entities import DEFAULT, ClientQuotaConfig, QuotaEntity

    config = ClientQuotaConfig({QuotaEntity(DEFAULT, None): {
        "producer_byte_rate": bound, "consumer_byte_rate": bound, "request_percentage": bound / 100,
        "controller_mutation_rate": bound / 100}})
    t = 1_000_000
    requests = []
    for i, gap in enumerate(gaps):
        t += gap
        for quota_type in ("produce", "fetch", "request", "controller_mutation"):
            value = float(values[i] // 100) if quota_type == "controller_mutation" else float(values[i])
            requests.append(ClientRequest(t, 1, f"u{i % 3}", "c", quota_type, value))
    check_agree(config, settings_, requests, [])


@pytest.mark.parametrize("window_ms", [1, 1000])
def test_segment_starts_follow_the_completion_rule(window_ms: int) -> None:
    t = np.array([0, 0, 999, 1000, 1000, 1999, 2000, 5000, 5001, 5999, 6000], dtype=np.int64)
    starts = kernels.segment_starts(t, window_ms)
    expected, start = [], None
    for i, ti in enumerate(t.tolist()):
        if start is None or ti - start >= window_ms:
            expected.append(i)
            start = ti
    assert starts.tolist() == expected


def test_java_round_edges_vectorised() -> None:
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 0.49999999999999994, np.nan, 1e300, -1e300, 2.4999])
    assert math_round.array(x).tolist() == [1, 2, 3, 0, -1, 0, 0, 2**63 - 1, -(2**63), 2]
    assert long_to_int.array(np.array([2**63 - 1, 2**31, 2**31 - 1, -1])).tolist() == [-1, -(2**31),
                                                                                       2**31 - 1, -1]


def test_factor_in_force_is_the_last_decision_at_or_before() -> None:
    times = np.array([100, 200, 200], dtype=np.int64)
    factors = np.array([0.5, 1.0, 0.25])
    got = kernels.factor_in_force(times, factors, np.array([99, 100, 199, 200, 10_000]))
    assert got.tolist() == [1.0, 0.5, 0.5, 0.25, 0.25]


def test_groups_too_far_apart_for_one_timeline_are_evaluated_one_by_one() -> None:
    """Times spanning 1e17 ms over many sharing groups would overflow the shifted timeline."""
    from quotaplane.clients.engine.entities import DEFAULT, ClientQuotaConfig, QuotaEntity

    config = ClientQuotaConfig({QuotaEntity(DEFAULT, DEFAULT): {"producer_byte_rate": 100.0,
                                                                "consumer_byte_rate": 100.0}})
    requests = [ClientRequest(t, 1, f"u{i}", "c", quota_type, 900.0)
                for i in range(60) for t in (0, 500, 10**17) for quota_type in ("produce", "fetch")]
    check_agree(config, ClientQuotaSettings(), requests, [])


def test_several_throttled_fetch_groups_in_one_call() -> None:
    """Each sharing group records its own throttled fetches back out, wherever it sits in the call."""
    from quotaplane.clients.engine.entities import DEFAULT, ClientQuotaConfig, QuotaEntity

    config = ClientQuotaConfig({QuotaEntity(DEFAULT, None): {"consumer_byte_rate": 1000.0}})
    requests = []
    for user in ("a", "b", "c"):
        for i, value in enumerate((8000, 4000, 1000, 3000, 500, 9000)):
            requests.append(ClientRequest(100 * i, 1, user, "x", "fetch", float(value)))
    check_agree(config, ClientQuotaSettings(), requests, [])
    got = run_groups(config, ClientQuotaSettings(), requests, [])
    throttled = {requests[i].user for i, row in got.items() if row["throttled"]}
    assert throttled == {"a", "b", "c"}
