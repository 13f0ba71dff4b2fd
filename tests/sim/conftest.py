"""Small simulator runs shared by the simulator tests."""

from __future__ import annotations

from collections import defaultdict

import pyarrow as pa
import pytest

from quotaplane.sim.kinds import KINDS
from quotaplane.sim.run import generate, resolve

# Small but eventful sizes: every feature shows up, each run takes a fraction of a second.
SMALL = {
    "fleet": {"brokers": 7, "days": 0.5, "interval_seconds": 60, "clients": 40, "topics": 12,
              "pulsar_topics": 4, "window_hours": 1.0},
    "collection-errors": {"brokers": 8, "days": 0.5, "interval_seconds": 60, "clients": 30, "topics": 10,
                          "pulsar_topics": 2, "window_hours": 1.0},
    "replication-fill": {},
    "linear-fill": {"days": 1.0},
    "retention-steady": {"days": 1.0},
    "accelerating-topic": {"days": 1.0},
}
FORECAST_SCENARIOS = ("linear-fill", "retention-steady", "accelerating-topic")


def tables(scenario: str, overrides: dict | None = None, chunk_rows: int = 500_000,
           kinds: list[str] | None = None, small: bool = True) -> dict[str, pa.Table]:
    """Every kind of a run (small sizes, or the scenario's defaults), concatenated."""
    found, params = resolve(scenario, {**(SMALL[scenario] if small else {}), **(overrides or {})})
    parts: dict[str, list[pa.Table]] = defaultdict(list)
    for kind, chunk in generate(found.build(params), params.seed, kinds or list(KINDS), chunk_rows):
        parts[kind].append(chunk)
    return {k: pa.concat_tables(v) for k, v in parts.items()}


@pytest.fixture(scope="session")
def fleet_tables() -> dict[str, pa.Table]:
    return tables("fleet")


@pytest.fixture(scope="session")
def errors_tables() -> dict[str, pa.Table]:
    return tables("collection-errors")


@pytest.fixture(scope="session")
def fill_tables() -> dict[str, pa.Table]:
    return tables("replication-fill")


@pytest.fixture(scope="session")
def forecast_tables() -> dict[str, dict[str, pa.Table]]:
    """The forecast scenarios at their default sizes (seconds each)."""
    return {name: tables(name, small=False) for name in FORECAST_SCENARIOS}
