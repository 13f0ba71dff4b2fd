"""The reference engine and the Spark pipeline agree exactly on generated telemetry.

Each hypothesis example is a fleet of independent scenarios (one namespace each) evaluated in
both time-check modes; every output of every mode is collected in ONE Spark job.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from quotaplane.backlog.records import BACKLOG_SNAPSHOTS
from tests.backlog.compare import as_strings, collect_all, reference_outputs, spark_frames
from tests.backlog.strategies import fleet, with_precise

FIELDS = BACKLOG_SNAPSHOTS.field_names


# A few examples of 20 scenarios x 2 modes each (HYPOTHESIS_PROFILE=thorough runs ~16x more).
EXAMPLES = max(3, settings.default.max_examples // 8)


@pytest.mark.spark
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(fleet(scenarios=20))
def test_reference_and_spark_agree_on_every_output(spark, generated) -> None:
    policies, rows = generated
    df = spark.createDataFrame([tuple(getattr(r, f) for f in FIELDS) for r in rows],
                               BACKLOG_SNAPSHOTS.spark_schema())
    expected: dict[str, list] = {}
    frames = []
    for precise in (True, False):
        tag = "precise" if precise else "estimate"
        variant = with_precise(policies, precise)
        for kind, out in reference_outputs(tag, variant, rows).items():
            expected.setdefault(kind, []).extend(out)
        frames.append(spark_frames(tag, variant, df))
    actual = collect_all(frames)
    for kind, rows_expected in expected.items():
        assert actual[kind] == as_strings(rows_expected), kind
