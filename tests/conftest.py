"""Shared test fixtures: one SparkSession per test process (`-n 2`: two), hypothesis profiles, and the
real Kafka clusters and Prometheus (tests/support/kafka/fixtures.py: one of each per session, each
cluster's tests in its own xdist group), and the real Pulsar (tests/support/pulsar: one per session,
its tests in the xdist group `pulsar`)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

# Example counts live here and nowhere else. Pure-Python properties use the loaded profile
# ("default", or "thorough" with HYPOTHESIS_PROFILE=thorough); the other kinds of property test take
# theirs with `@settings(parent=settings.get_profile(KIND))`, scaled the same way:
# - "kernel": a numpy kernel against the reference engine (cheap per example);
# - "differential": both engines on generated telemetry, one Spark job per example (no shrinking:
#   each step would be a Spark job, and the failure names the scenario and the row).
THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
SCALE = 16 if THOROUGH else 1
settings.register_profile(
    "default", max_examples=25, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile("thorough", max_examples=400, deadline=None,
                          suppress_health_check=list(HealthCheck))
settings.register_profile("kernel", max_examples=400 * (4 if THOROUGH else 1), deadline=None,
                          suppress_health_check=list(HealthCheck))
settings.register_profile("differential", max_examples=4 * SCALE, deadline=None,
                          suppress_health_check=list(HealthCheck),
                          phases=[Phase.explicit, Phase.reuse, Phase.generate])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

from tests.support.kafka.fixtures import (  # noqa: E402  (the fixtures, shared by every test module)
    GroupIds,
    assign_groups,
    kafka_cluster,
    kafka_metrics,
    prometheus,
    strimzi_cluster,
    strimzi_metrics,
)

__all__ = ["kafka_cluster", "kafka_metrics", "prometheus", "strimzi_cluster", "strimzi_metrics"]

REPO = Path(__file__).resolve().parents[1]


@pytest.hookimpl(tryfirst=True)  # before xdist's worker reads the groups to name the tests
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    assign_groups(items)


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(GroupIds(), "quotaplane-xdist-group-ids")


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """The one local SparkSession shared by every Spark test of this process (2 cores, small shuffles)."""
    from quotaplane.core.spark.session import build_session

    session = build_session(
        master="local[2]",
        app_name="quotaplane-tests",
        extra_conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
                    "spark.sql.adaptive.enabled": "false"},
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def pulsar_session() -> Iterator[object]:
    """The session's Pulsar (tests.support.pulsar.fixture), or why it did not start."""
    from tests.support.pulsar.fixture import session_target

    yield from session_target()


@pytest.fixture
def pulsar_broker(pulsar_session: object) -> object:
    """The real Pulsar broker; a test that needs it fails with the reason when it did not start.
    Tests using it are in the xdist group `pulsar` (one test process starts it once)."""
    from tests.support.pulsar.launcher import PulsarStartError

    if isinstance(pulsar_session, PulsarStartError):
        raise pulsar_session
    return pulsar_session


@pytest.fixture
def repo_root() -> Path:
    return REPO
