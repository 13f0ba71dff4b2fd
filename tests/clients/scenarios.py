"""Generated client quota scenarios (hypothesis strategies) and helpers shared by the tests."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd
from hypothesis import strategies as st

from quotaplane.clients.engine.entities import DEFAULT, ClientQuotaConfig, QuotaEntity
from quotaplane.clients.engine.evaluate import ClientRequest
from quotaplane.clients.engine.quota_types import CONFIG_KEY, QUOTA_TYPES, REQUEST
from quotaplane.clients.engine.settings import MUTATION_MODES, ClientQuotaSettings
from quotaplane.clients.engine.storage_factor import StorageDecision

USERS = ("u1", "u2", "<default>")  # a user literally named "<default>" is not the default entity
CLIENTS = ("c1", "c2", "")
ENTITY_USERS = ("u1", "u2", DEFAULT, None)
ENTITY_CLIENTS = ("c1", "c2", DEFAULT, None)
GAPS = (0, 0, 1, 7, 499, 500, 999, 1000, 1001, 2000, 3500, 11_000, 30_000, 61_000)
RATES = (0.0, 1.0, 2.0, 50.0, 100.0, 250.0, 1000.0, 4000.0)
PERCENTS = (0.0, 0.5, 1.0, 3.7, 10.0)
EPOCH = 1_767_225_600_000


@st.composite
def configs(draw: st.DrawFn) -> ClientQuotaConfig:
    shapes = [QuotaEntity(u, c) for u in ENTITY_USERS for c in ENTITY_CLIENTS
              if u is not None or c is not None]
    chosen = draw(st.lists(st.sampled_from(shapes), max_size=7, unique=True))
    quotas = {}
    for entity in chosen:
        keys = draw(st.lists(st.sampled_from(list(CONFIG_KEY.values())), min_size=1, max_size=4, unique=True))
        values = {}
        for key in keys:
            pool = PERCENTS if key == "request_percentage" else RATES
            values[key] = draw(st.sampled_from(pool))
        quotas[entity] = values
    return ClientQuotaConfig(quotas)


@st.composite
def request_lists(draw: st.DrawFn, brokers: tuple[int, ...] = (1, 2), max_size: int = 40,
                  quota_types: tuple[str, ...] = QUOTA_TYPES) -> list[ClientRequest]:
    n = draw(st.integers(0, max_size))
    start = draw(st.sampled_from((0, 250, EPOCH)))
    t = start
    out = []
    for _ in range(n):
        t += draw(st.sampled_from(GAPS))
        quota_type = draw(st.sampled_from(quota_types))
        if quota_type == REQUEST:
            value = draw(st.sampled_from((0.0, 0.3, 1.5, 10.0, 25.25, 100.0, 999.9999)))
        elif quota_type == "controller_mutation":
            value = float(draw(st.integers(0, 30)))
        else:
            value = float(draw(st.sampled_from((0, 1, 100, 400, 999, 2300, 6000, 20_000))))
        out.append(ClientRequest(t, draw(st.sampled_from(brokers)), draw(st.sampled_from(USERS)),
                                 draw(st.sampled_from(CLIENTS)), quota_type, value))
    if out and draw(st.booleans()):
        order = draw(st.permutations(range(len(out))))
        out = [out[i] for i in order]
    return out


@st.composite
def settings_strategy(draw: st.DrawFn) -> ClientQuotaSettings:
    storage = draw(st.booleans())
    return ClientQuotaSettings(
        window_num=draw(st.integers(1, 4)), window_size_seconds=draw(st.integers(1, 2)),
        controller_window_num=draw(st.integers(1, 3)), controller_window_size_seconds=draw(st.integers(1, 2)),
        metrics_num_samples=draw(st.integers(1, 3)),
        metrics_sample_window_ms=draw(st.sampled_from((1000, 2000, 30_000))),
        quota_value_metric=draw(st.booleans()), storage_combined=storage,
        static_produce=draw(st.sampled_from((None, 0.0, 300.0))) if storage else None,
        controller_mutation_mode=draw(st.sampled_from(MUTATION_MODES)),
        interval_ms=draw(st.sampled_from((1000, 5000, 60_000))),
    )


@st.composite
def decision_lists(draw: st.DrawFn, brokers: tuple[int | None, ...] = (None, 1, 2)) -> list[StorageDecision]:
    n = draw(st.integers(0, 6))
    return [StorageDecision(draw(st.sampled_from((0, 300, 2000, 9000, EPOCH, EPOCH + 5000, EPOCH + 40_000))),
                            draw(st.sampled_from((0.0, 0.25, 0.5, 1.0))), draw(st.sampled_from(brokers)))
            for _ in range(n)]


def decisions_frame(decisions: list[StorageDecision]) -> pd.DataFrame:
    """Storage decisions as the pandas frame the Spark engine takes them in."""
    return pd.DataFrame({"ts_ms": [d.ts_ms for d in decisions],
                         "throttle_factor": [d.throttle_factor for d in decisions],
                         "observing_broker_id": pd.array([d.observing_broker_id for d in decisions],
                                                         dtype="Int64")})


@dataclass
class Scenario:
    config: ClientQuotaConfig
    requests: list[ClientRequest]


def same(a: object, b: object) -> bool:
    """Equal, with None == None and NaN == NaN (floats must be bit-identical otherwise)."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b
