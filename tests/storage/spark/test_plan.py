"""The shape of the storage plans: the input crosses one shuffle and one sort, whatever is computed
from it.

Plan shapes, not timings: the cost of the storage stage is the shuffle and sort of every row once
(docs/performance.md); a second shuffle or sort of the rows would double it. Counted on the plans as
they would run on large inputs (no broadcasts of the row tables).
"""

from __future__ import annotations

import pytest

from quotaplane.storage.records import COLLECTION_ERRORS, MEMBERSHIP, VOLUMES
from quotaplane.storage.spark.decisions import evaluate
from tests.storage.engine.helpers import cluster_config, local_config, strimzi_config
from tests.support.differential import records_frame
from tests.support.plans import SHUFFLE, SORT, SORT_AGGREGATE, WINDOW, describe, operators

pytestmark = pytest.mark.spark
GB = 1 << 30
BROADCAST = "spark.sql.autoBroadcastJoinThreshold"
CO_PARTITION = "spark.sql.requireAllClusterKeysForCoPartition"


@pytest.fixture(scope="module")
def inputs(spark):
    volumes = [{"ts": 1000 * i, "cluster": "c", "poll_id": i, "broker_id": b, "log_dir": "/d",
                "total_bytes": 100 * GB, "available_bytes": (50 - i) * GB} for i in range(5) for b in (1, 2)]
    members = [{"ts": 1000 * i, "cluster": "c", "poll_id": i, "broker_id": b}
               for i in range(5) for b in (1, 2)]
    errors = [{"ts": 2500, "cluster": "c", "poll_id": 2, "reason": "DESCRIBE_LOG_DIR_ERROR"}]
    return (records_frame(spark, volumes, VOLUMES), records_frame(spark, members, MEMBERSHIP),
            records_frame(spark, errors, COLLECTION_ERRORS))


@pytest.fixture
def large(spark):
    """Plan the joins as on large inputs (tiny ones would be broadcast)."""
    assert spark.conf.get(CO_PARTITION) == "false"
    threshold = spark.conf.get(BROADCAST)
    spark.conf.set(BROADCAST, "-1")
    yield spark
    spark.conf.set(BROADCAST, threshold)
    spark.conf.set(CO_PARTITION, "false")


def _rows_shuffles(df) -> list[str]:
    plan = df._jdf.queryExecution().executedPlan().toString()
    return [line.strip() for line in plan.splitlines() if "Exchange hashpartitioning" in line]


CLUSTER = cluster_config(("availableRatioBelow", "0.5"), ("availableRatioBelow", "0.2"))


# (config, sort aggregations, windows) of the decisions: cluster source per key, broker and round;
# the local source per key and broker, then a window over the round for its active brokers
PLANS = [(CLUSTER, 3, 0), (local_config(100 * GB, 200 * GB), 2, 1)]


@pytest.mark.parametrize("persist", [False, True], ids=["computed", "cached"])
@pytest.mark.parametrize(("config", "aggregations", "windows"), PLANS, ids=["cluster", "local"])
def test_decisions_and_observations_cost_one_shuffle_and_one_sort(large, inputs, config, aggregations,
                                                                   windows, persist) -> None:
    # cached (as the stage runs it), the keyed rows keep their partitioning and order: nothing more
    ev = evaluate(config, *inputs, persist=persist)
    # the shuffle by round (`keyed_rows`), the sort of its aggregation by key; every later level
    # streams in that order: sort aggregations and windows over the sorted rows, no join
    ops = operators(ev.decisions)
    assert (ops[SHUFFLE], ops[SORT], ops[SORT_AGGREGATE], ops[WINDOW]) == (1, 1, aggregations, windows), \
        describe(ev.decisions)
    # the counted observations: the same shuffle and sort, then one window over the round (its
    # member brokers as a set); no join
    ops = operators(ev.volumes)
    assert (ops[SHUFFLE], ops[SORT], ops[SORT_AGGREGATE], ops[WINDOW]) == (1, 1, 1, 1), describe(ev.volumes)
    assert all("REPARTITION_BY_COL" in s for s in _rows_shuffles(ev.decisions))
    ev.release()


def test_strimzi_plan_is_guarded_and_joins_in_place(large, inputs) -> None:
    ev = evaluate(strimzi_config(), *inputs)
    ops = operators(ev.decisions)
    # beyond the rows' shuffle by round, the strimzi dialect orders each cluster's rounds (a row per
    # round, not per observation) for its validity and cache windows, and joins the cache's carried
    # observations back; the exchanges it repeats are computed once (five reused)
    assert (ops[SHUFFLE], ops["ReusedExchange"], ops[SORT], ops[WINDOW]) == (10, 5, 22, 14), \
        describe(ev.decisions)
    shuffles = _rows_shuffles(ev.decisions)
    # the joins on ROUND plus more columns need no shuffle of the rows: without the session setting
    # they would shuffle again
    large.conf.set(CO_PARTITION, "true")
    assert len(_rows_shuffles(evaluate(strimzi_config(), *inputs).decisions)) > len(shuffles)
