"""The shape of the storage plans: the input crosses one shuffle, whatever is computed from it.

Plan shapes, not timings: the cost of the storage stage is the shuffle and sort of every row once
(docs/performance.md); a second shuffle of the rows would double it.
"""

from __future__ import annotations

import pytest

from quotaplane.storage.records import COLLECTION_ERRORS, MEMBERSHIP, VOLUMES
from quotaplane.storage.spark.decisions import evaluate
from tests.storage.engine.helpers import cluster_config
from tests.support.differential import records_frame

pytestmark = pytest.mark.spark
GB = 1 << 30


def _shuffles(df) -> list[str]:
    plan = df._jdf.queryExecution().executedPlan().toString()
    return [line.strip() for line in plan.splitlines() if "Exchange hashpartitioning" in line]


def test_aggregations_and_joins_need_no_shuffle_beyond_the_one_by_round(spark) -> None:
    volumes = [{"ts": 1000 * i, "cluster": "c", "poll_id": i, "broker_id": b, "log_dir": "/d",
                "total_bytes": 100 * GB, "available_bytes": (50 - i) * GB} for i in range(5) for b in (1, 2)]
    members = [{"ts": 1000 * i, "cluster": "c", "poll_id": i, "broker_id": b}
               for i in range(5) for b in (1, 2)]
    errors = [{"ts": 2500, "cluster": "c", "poll_id": 2, "reason": "DESCRIBE_LOG_DIR_ERROR"}]
    config = cluster_config(("availableRatioBelow", "0.5"), ("availableRatioBelow", "0.2"))
    inputs = (records_frame(spark, volumes, VOLUMES), records_frame(spark, members, MEMBERSHIP),
              records_frame(spark, errors, COLLECTION_ERRORS))
    # tiny inputs would be broadcast: plan the joins as on large inputs
    broadcast, key = "spark.sql.autoBroadcastJoinThreshold", "spark.sql.requireAllClusterKeysForCoPartition"
    assert spark.conf.get(key) == "false"
    threshold = spark.conf.get(broadcast)
    spark.conf.set(broadcast, "-1")
    try:
        ev = evaluate(config, *inputs)
        for table in (ev.decisions, ev.volumes):
            shuffles = _shuffles(table)
            assert shuffles and all("REPARTITION_BY_COL" in s for s in shuffles), shuffles
        # the session setting that keeps the joins in place: without it they shuffle again
        spark.conf.set(key, "true")
        assert any("ENSURE_REQUIREMENTS" in s for s in _shuffles(evaluate(config, *inputs).volumes))
    finally:
        spark.conf.set(key, "false")
        spark.conf.set(broadcast, threshold)
