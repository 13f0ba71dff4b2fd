"""The client quota stage of `quotaplane run`.

Reads `client_requests` telemetry and evaluates it with the client quota configuration and the
settings from the broker/storage properties (quota windows, `client.quota.value.metric.enable`, the
static produce quota; see `quotaplane.clients.policy`). With the storage decisions (the storage
callback installed), produce limits follow the storage throttle factor.

Writes under the output directory:
- `client_request_decisions/`: one row per request (tags, limit, rate, throttle time);
- `client_quota_intervals/`: per broker, quota type, metric tags and interval;
- `client_quota_standing/`: per broker, quota type and metric tags over the whole input;
- `quarantine/client_requests/`: rows that broke the telemetry schema, with the reason (written only
  when there are some).

Passes over the rows: the check's count, the decisions (one shuffle by broker, one Python call per
partition, which writes the rows it decides), the intervals (from the written decisions).
Everything else comes from one aggregation of the intervals per sharing group, collected once
(`report_data`), and one query for the intervals of the groups the report draws.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from quotaplane.clients import metrics as client_metrics
from quotaplane.clients import report as client_report
from quotaplane.clients.config import ClientsRunConfig
from quotaplane.clients.engine.entities import ClientQuotaConfig
from quotaplane.clients.engine.evaluate import records_every_type
from quotaplane.clients.engine.settings import ClientQuotaSettings
from quotaplane.clients.records import CLIENT_REQUESTS
from quotaplane.clients.spark import report_data
from quotaplane.clients.spark.evaluate import TABLE_DROPS, write_decisions
from quotaplane.clients.spark.groups import FactorTable
from quotaplane.clients.spark.intervals import (
    STANDING_COLUMNS,
    interval_rows,
    standing_rows,
)
from quotaplane.clients.spark.partition import output_schema
from quotaplane.core.policy import StageContext, StageResult
from quotaplane.core.spark.driver_reads import read_run_input
from quotaplane.core.spark.readers import FILE_ID, POSITION, check_once
from quotaplane.core.spark.session import shuffle_partitions
from quotaplane.core.spark.tables import read_written, write_parquet

NAME = "clients"
INPUT = "client_requests"
DECISIONS_TABLE = "client_request_decisions"
INTERVALS_TABLE = "client_quota_intervals"
STANDING_TABLE = "client_quota_standing"


# At most about this many requests in one partition of the evaluation (one Python worker holds a
# partition: ~100 bytes a request); more partitions only as the input grows.
ROWS_PER_PARTITION = 400_000


def _factor_table(decisions: DataFrame | None) -> tuple[FactorTable, list[dict[str, Any]]]:
    if decisions is None:
        return FactorTable.from_pandas(None), []
    columns = ["ts_ms", "throttle_factor"]
    if "observing_broker_id" in decisions.columns:
        columns.append("observing_broker_id")
    pdf = decisions.select(*columns).where(F.col("throttle_factor").isNotNull()).toPandas()
    rows = pdf.to_dict("records")
    for row in rows:
        observing = row.get("observing_broker_id")
        row["observing_broker_id"] = None if observing is None or observing != observing else int(observing)
    return FactorTable.from_pandas(pdf), rows


def run_stage(ctx: StageContext, run_config: ClientsRunConfig,
              storage: Callable[[], DataFrame | None]) -> StageResult:
    """Measure and throttle every request. `storage()`: the storage decisions (None when the storage
    stage did not run), asked for once the requests are read: the storage stage may still be
    deciding."""
    path = ctx.find_input(INPUT)
    assert path is not None, "the runner runs a stage only when its input is present"
    spark = ctx.spark
    out = ctx.out_dir

    with ctx.progress.step("clients: reading client requests"):
        # each row's file and position break ties between requests of one sharing group at the
        # same millisecond (`_file`, `_row`). Checked in one scan; text inputs are cached, Parquet
        # is scanned again
        read = read_run_input(ctx, CLIENT_REQUESTS, path, position=True)
        checked = check_once(read, out / "quarantine" / CLIENT_REQUESTS.name)
        counts = checked.counts

    try:  # the read rows stay cached until they are decided (or the storage stage fails first)
        storage_decisions = storage()
        factors, decision_rows = _factor_table(storage_decisions)
        config, settings = run_config.quotas, run_config.settings(storage_decisions is not None)
        storage_combined = settings.storage_combined
        with ctx.progress.step("clients: measuring rates and throttle times"):
            # one shuffle (by broker) and one Python call per partition, which writes the rows it
            # decides
            requests = (checked.used.withColumnRenamed(FILE_ID, "_file").withColumnRenamed(POSITION, "_row")
                        .withColumn("config_id", F.lit(0).cast("long")))
            partitions = max(shuffle_partitions(spark),
                             -(-counts.used // ROWS_PER_PARTITION))
            columns = [c for c in output_schema({0: config}, settings).names if c not in TABLE_DROPS]
            write_decisions(out / DECISIONS_TABLE, requests, {0: config}, settings, factors, partitions,
                            columns)
            decided = output_schema({0: config}, settings, columns)
            decisions = _read_back(spark, out / DECISIONS_TABLE, decided)
    finally:
        checked.release()

    with ctx.progress.step("clients: intervals and standing"):
        intervals = interval_rows(decisions, settings.interval_ms, settings.quota_value_metric)
        intervals = intervals.drop("config_id")
        write_parquet(intervals, out / INTERVALS_TABLE)
        intervals = _read_back(spark, out / INTERVALS_TABLE, intervals.schema)
        # the standing table and, in the same aggregation, what the summary, metrics and report
        # need of each sharing group: collected (one row a group), then written from the cache
        groups = standing_rows(intervals, extra=True).persist()
        try:
            group_rows = _rows(groups)
            write_parquet(groups.select(*STANDING_COLUMNS).drop("config_id"), out / STANDING_TABLE)
        finally:
            groups.unpersist()
        group_rows.sort(key=report_data.group_key)
        totals = report_data.totals(group_rows, _unrecorded(decisions, config, settings))
        by_standing = Counter(r["standing"] for r in group_rows)
        standing_list = report_data.report_standing(group_rows)

    with ctx.progress.step("clients: metrics and report"):
        metric_rows = report_data.metric_rows(group_rows, settings.quota_value_metric)
        ctx.registry.register(client_metrics.ClientMetrics(metric_rows, metric_rows,
                                                           settings.quota_value_metric))
        summary = {**totals, "sharing_groups": len(group_rows),
                   "over_quota_groups": by_standing.get("over", 0),
                   "near_quota_groups": by_standing.get("near", 0),
                   "settings": _settings_summary(settings),
                   "quota_entities": len(config)}
        throttled = report_data.most_throttled(standing_list)
        busiest = report_data.busiest_produce(standing_list) if storage_combined else []
        picked = _intervals_of(intervals, [*throttled, *busiest])  # one query for both
        storage = (report_data.storage_report(group_rows, report_data.of_groups(picked, busiest),
                                              decision_rows, settings, config)
                   if storage_combined else None)
        sections = client_report.build_sections(client_report.ClientsReportData(
            standing_list, summary, report_data.of_groups(picked, throttled), storage))
    return StageResult(NAME, summary, [counts], sections, _console(summary, standing_list, settings))


def _rows(frame: DataFrame) -> list[dict[str, Any]]:
    """A small table's rows as dicts of Python values (through Arrow: many groups collect fast)."""
    pdf = frame.toPandas()
    for name, kind in pdf.dtypes.items():
        if kind.kind == "f":
            pdf[name] = pdf[name].astype(object).where(pdf[name].notna(), None)  # NaN: a null
    return pdf.to_dict("records")


def _read_back(spark: SparkSession, path: Path, schema: StructType) -> DataFrame:
    """A table just written with `schema`, read back (so later steps do not recompute it; no job
    infers its schema: `read_written`), with `config_id` 0."""
    return read_written(spark, path, schema).withColumn("config_id", F.lit(0).cast("long"))


def _unrecorded(decisions: DataFrame, config: ClientQuotaConfig,
                settings: ClientQuotaSettings) -> dict[str, int]:
    """Requests per quota type that Kafka does not record: counted only when the configuration
    leaves a type unrecorded (otherwise every request is in a sharing group's intervals)."""
    if records_every_type([config], settings):
        return {}
    rows = (decisions.where(~F.col("recorded")).groupBy("quota_type")
            .agg(F.count(F.lit(1)).alias("n")).collect())
    return {r["quota_type"]: r["n"] for r in rows}


def _intervals_of(intervals: DataFrame, groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The interval rows of `groups`, in one query, by group and time (so the report's figures
    do not depend on how Spark laid out the table)."""
    if not groups:
        return []
    condition = None
    for g in groups:
        this = ((F.col("broker_id") == g["broker_id"]) & (F.col("quota_type") == g["quota_type"])
                & (F.col("user") == g["user"]) & (F.col("client_id") == g["client_id"]))
        condition = this if condition is None else condition | this
    rows = [r.asDict() for r in intervals.where(condition).collect()]
    return sorted(rows, key=lambda r: (*report_data.group_key(r), r["interval_start_ms"]))


def _settings_summary(settings: ClientQuotaSettings) -> dict[str, Any]:
    return {"quota.window.num": settings.window_num,
            "quota.window.size.seconds": settings.window_size_seconds,
            "client.quota.value.metric.enable": settings.quota_value_metric,
            "storage_callback": settings.storage_combined,
            "static_produce": settings.static_produce,
            "controller_mutation_mode": settings.controller_mutation_mode,
            "interval_ms": settings.interval_ms}


def _console(summary: dict[str, Any], standing: list[dict[str, Any]],
             settings: ClientQuotaSettings) -> list[str]:
    requests = summary["requests"]
    throttled = summary["throttled_requests"]
    share = 100.0 * throttled / requests if requests else 0.0
    lines = [f"{requests:,} requests ({summary['recorded_requests']:,} recorded), {throttled:,} throttled "
             f"({share:.1f}%), {summary['throttle_time_total_ms'] / 1000:,.1f} s of throttle time"]
    over = sorted((r for r in standing if r["standing"] == "over"), key=lambda r: -r["utilisation_max_pct"])
    line = (f"{summary['sharing_groups']:,} sharing groups, {summary['over_quota_groups']:,} over quota, "
            f"{summary['near_quota_groups']:,} near it")
    if over:
        top = over[0]
        line += (f"; furthest over: {top['quota_type']} user={top['user'] or '-'} "
                 f"client-id={top['client_id'] or '-'} on broker {top['broker_id']} at "
                 f"{top['utilisation_max_pct']:,.0f}%")
    lines.append(line)
    if settings.storage_combined:
        factor = summary.get("throttle_factor_min")
        lines.append("produce limits follow the storage throttle factor"
                     + (f" (lowest {factor:g})" if factor is not None else ""))
    return lines
