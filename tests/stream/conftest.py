"""The stream tests' shared case: one landing, and the batch run's decision tables over it."""

from __future__ import annotations

from typing import Any

import pytest

from quotaplane.core.runner import run_pipeline
from quotaplane.registry import POLICIES
from tests.stream.streams import StreamCase, batch_tables, stream_case


@pytest.fixture(scope="session")
def case(tmp_path_factory: pytest.TempPathFactory) -> StreamCase:
    return stream_case(tmp_path_factory.mktemp("stream-case"))


@pytest.fixture(scope="session")
def batch(spark, case: StreamCase) -> dict[str, list[dict[str, Any]]]:
    """`quotaplane run` over the landing's files: the decisions every stream must give."""
    out = case.root / "batch"
    run_pipeline(case.landing, case.configs, out, POLICIES, stream=None, spark=spark)
    return batch_tables(spark, out)
