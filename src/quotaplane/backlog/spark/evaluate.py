"""The whole backlog evaluation over the checked snapshots (every row, with `_reason` from the
reader's row rules) in ONE shuffle (by topic), ONE sort and three window operators:

    checked.repartition(topic)                          the one shuffle
      window (topic, ts_ms, subscription): duplicates   the one sort, by (topic, ts_ms, subscription)
      attach_quotas                                     lookups (or broadcast joins), order kept
      window (topic, ts_ms): the group rules' partitioned_topic bounds, the oldest subscription and,
                             in estimate mode, the slowest cursor that is not expired
      group reasons, with_oldest, decide, with_evictions    projections
      window topic in (ts_ms, subscription) order: counters and each topic's totals
    checks    = topic_rows         one row per (tick, topic), with the counters
    evictions = eviction_rows      per evicted subscription
    totals    = topic_totals       one small row per topic (collected)

Every window partitions by `topic` plus a prefix of `(ts_ms, subscription)`, so the shuffle by topic
and the one sort serve them all. The tick's oldest subscription is taken over the rows that pass the
row rules and are no duplicate: when the tick's rows conflict on `partitioned_topic` none is used,
so that is the minimum over its used rows. Quarantined rows stay (they are counted per topic) but
take no part in any check.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from quotaplane.backlog.config import BacklogPolicies
from quotaplane.backlog.spark.checks import (
    TOPIC_COLUMNS,
    decide,
    oldest_value,
    slowest_key,
    topic_rows,
    with_oldest,
)
from quotaplane.backlog.spark.eviction import (
    EVICTION_COLUMNS,
    estimate_expired,
    eviction_rows,
    with_evictions,
)
from quotaplane.backlog.spark.reader import duplicates, parent, with_reason
from quotaplane.backlog.spark.resolve import attach_quotas
from quotaplane.backlog.spark.stats import topic_totals, with_topic_totals
from quotaplane.core.spark.readers import REASON, used_row

COUNTERS = ("size_evictions_total", "time_evictions_total")
# what the tables read from the rows (the stage caches only these)
KEPT = (*dict.fromkeys(c[0] if isinstance(c, tuple) else c for c in TOPIC_COLUMNS), *COUNTERS, "_rank1",
        *EVICTION_COLUMNS, "_topic")


def _tick_windows(precise: bool) -> list:
    """The window functions over a (tick, topic): the group rules' bounds, the oldest subscription
    (`_o`) and, in estimate mode, the eviction's stop (`_stop`)."""
    tick = Window.partitionBy("topic", "ts_ms")
    candidate = used_row() & (F.col("_duplicates") <= 1)
    out = [F.min(parent()).over(tick).alias("_parent_min"), F.max(parent()).over(tick).alias("_parent_max"),
           F.min(F.when(candidate, oldest_value())).over(tick).alias("_o")]
    if not precise:
        out.append(F.min(F.when(candidate & ~estimate_expired(), slowest_key())).over(tick).alias("_stop"))
    return out


def decided_rows(checked: DataFrame, policies: BacklogPolicies) -> DataFrame:
    """The snapshot rows the tables read (each check's row, each evicted subscription's row, and
    each topic's first row with its totals), with the quotas, decision, eviction and counters (see
    the module doc). Without `_reason`, every row of `checked` passed the row rules."""
    precise = policies.broker.precise_time_check
    if REASON not in checked.columns:
        checked = checked.withColumn(REASON, F.lit(None).cast("string"))
    return (checked.repartition("topic")
            .select("*", duplicates().alias("_duplicates"))
            .transform(attach_quotas(policies))
            .select("*", *_tick_windows(precise))
            .withColumn(REASON, with_reason(F.col("_duplicates"), F.col("_parent_min"), F.col("_parent_max")))
            .transform(with_oldest).transform(decide(precise)).transform(with_evictions(precise))
            .transform(with_topic_totals)
            .where(F.col("_rank1") | F.col("_ev_type").isNotNull() | F.col("_topic").isNotNull())
            .select(*KEPT))


@dataclass
class Evaluation:
    """The outputs of the decided rows: the checks and evictions tables, and each topic's totals."""

    rows: DataFrame
    checks: DataFrame
    evictions: DataFrame
    totals: DataFrame


def evaluation(rows: DataFrame) -> Evaluation:
    """The tables of `decided_rows` (each a filter and projection of them: no other pass)."""
    return Evaluation(rows, topic_rows(rows, *COUNTERS), eviction_rows(rows), topic_totals(rows))
