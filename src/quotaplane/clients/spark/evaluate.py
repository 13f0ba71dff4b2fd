"""Per-request decisions in Spark: the sequential rate state of each sharing group.

spec: Kafka client quotas, the rules of `quotaplane.clients.engine.evaluate`.
The state (samples, token bucket) is sequential per (config, broker, quota type, metric tags), so
the requests are hash-partitioned by (config, broker) (one shuffle, no sort) and each partition is
decided by one Python call over Arrow (`mapInArrow`, see `partition`): resolution, the per-group
numpy kernels (`groups`), and the rows back, with no join and no per-group call. The stage has the
tasks write the rows they decide (`write_decisions`, `core.spark.task_writes`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from quotaplane.clients.engine.entities import ClientQuotaConfig
from quotaplane.clients.engine.settings import ClientQuotaSettings
from quotaplane.clients.spark.groups import FactorTable
from quotaplane.clients.spark.partition import INPUT_COLUMNS, output_schema, partition_function
from quotaplane.core.spark.task_writes import MapFunction, write_from_tasks

# What the decisions table holds of the decisions (no configuration id, no input position).
TABLE_DROPS = ("config_id", "_file", "_row")


def evaluate_requests(requests: DataFrame, configs: Mapping[int, ClientQuotaConfig],
                      settings: ClientQuotaSettings, factors: FactorTable | None = None,
                      partitions: int | None = None, columns: Sequence[str] | None = None) -> DataFrame:
    """Per-request decisions (`partition.DECISION_FIELDS` less `TABLE_DROPS`, plus `quota_value`
    when the KIP-786 metric is on; only `columns` of them when given).

    `requests` has the telemetry fields plus `config_id` (which of `configs` applies), `_file` and
    `_row` (longs: the input order, which breaks ties between requests of one group at the same
    millisecond). `partitions`: how many partitions the (config, broker) hash partitioning makes (by
    default the session's shuffle partitions, which adaptive execution may coalesce); one Python
    worker holds a partition.
    """
    spread, fn, schema = _planned(requests, configs, settings, factors, partitions, columns)
    return spread.mapInArrow(fn, schema)


def write_decisions(path: Path, requests: DataFrame, configs: Mapping[int, ClientQuotaConfig],
                    settings: ClientQuotaSettings, factors: FactorTable | None = None,
                    partitions: int | None = None, columns: Sequence[str] | None = None) -> None:
    """`evaluate_requests`' rows written to `path` as Parquet by the tasks that decide them."""
    write_from_tasks(*_planned(requests, configs, settings, factors, partitions, columns), path)


def _planned(requests: DataFrame, configs: Mapping[int, ClientQuotaConfig], settings: ClientQuotaSettings,
             factors: FactorTable | None, partitions: int | None, columns: Sequence[str] | None
             ) -> tuple[DataFrame, MapFunction, T.StructType]:
    """The requests spread by (config, broker), the per-partition call and its schema."""
    schema = output_schema(configs, settings, columns)
    fn = partition_function(configs, settings, factors or FactorTable.from_pandas(None), schema)
    rows = requests.select(*INPUT_COLUMNS)
    spread = (rows.repartition(partitions, "config_id", "broker_id") if partitions
              else rows.repartition("config_id", "broker_id"))
    return spread, fn, schema
