"""The whole backlog evaluation over the checked snapshots (every row, with `_reason` from the
reader's row rules) in ONE shuffle (by topic) and one Python call per partition over Arrow
(`mapInArrow`):

    checked.repartition(n, topic)       the one shuffle: a partition holds whole topics
      mapInArrow(kernel.decide)         sort by (topic, tick, subscription), group rules, checks,
                                        evictions, counters and totals: numpy over the Arrow columns
    checks    = topic_rows              one row per (tick, topic), with the counters
    evictions = eviction_rows           per evicted subscription
    totals    = topic_totals            one small row per topic (collected)

The rules are the reference engine's, applied to arrays (`quotaplane.backlog.engine.kernel`).
Quarantined rows are shuffled too: they are counted per topic, and take no part in any check.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_type, to_arrow_schema

from quotaplane.backlog.config import BacklogPolicies
from quotaplane.backlog.engine.kernel import COUNTERS, INPUT, NEVER_NULL, OUTPUT_TYPES, decide
from quotaplane.backlog.spark.tables import eviction_rows, topic_rows, topic_totals
from quotaplane.core.spark.readers import REASON


def kept_schema(checked: T.StructType) -> T.StructType:
    """The decided rows' columns (`kernel.OUTPUT_TYPES`); `ts_ms`, `topic` and `namespace` are
    nullable when the input's `ts_ms` or `topic` is."""
    nullable_key = checked["ts_ms"].nullable or checked["topic"].nullable

    def nullable(name: str) -> bool:
        return nullable_key if name in ("ts_ms", "topic", "namespace") else name not in NEVER_NULL

    return T.StructType([T.StructField(n, from_arrow_type(t), nullable(n)) for n, t in OUTPUT_TYPES.items()])


def decided_rows(checked: DataFrame, policies: BacklogPolicies, partitions: int) -> DataFrame:
    """The snapshot rows the tables read (each check's row, each evicted subscription's row, and
    each topic's totals on one row), with the quotas, decision, eviction and counters (see the
    module doc), in `partitions` partitions (adaptive execution merges none: the stage caches
    them). Without `_reason`, every row of `checked` passed the row rules."""
    if REASON not in checked.columns:
        checked = checked.withColumn(REASON, F.lit(None).cast("string"))
    schema = kept_schema(checked.schema)
    arrow = to_arrow_schema(schema)

    def partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        received = list(batches)
        table = pa.Table.from_batches(received) if received else None
        if table is not None and table.num_rows:
            decided = decide(table, policies)
            yield from decided.cast(_like(arrow, table.schema.field("topic").type)).to_batches()

    return checked.select(*INPUT).repartition(partitions, "topic").mapInArrow(partition, schema)


def _like(schema: pa.Schema, text: pa.DataType) -> pa.Schema:
    """`schema` with its strings in the type Spark sent them (it expects them back so; the kernel
    reads plain and large strings alike)."""
    def retype(kind: pa.DataType) -> pa.DataType:
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            return text
        if pa.types.is_struct(kind):
            return pa.struct([f.with_type(retype(f.type)) for f in kind])
        return kind

    return pa.schema([f.with_type(retype(f.type)) for f in schema])


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
