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
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from quotaplane.clients import metrics as client_metrics
from quotaplane.clients import report as client_report
from quotaplane.clients.engine.entities import ClientQuotaConfig
from quotaplane.clients.engine.quota_types import PRODUCE
from quotaplane.clients.engine.resolution import QuotaResolver, Tags
from quotaplane.clients.engine.settings import ClientQuotaSettings
from quotaplane.clients.records import CLIENT_REQUESTS
from quotaplane.clients.spark.evaluate import FactorTable, evaluate_requests
from quotaplane.clients.spark.intervals import KEY, interval_rows, standing_rows
from quotaplane.clients.spark.resolution import quota_table, resolve_quotas
from quotaplane.core.policy import StageContext, StageResult
from quotaplane.core.spark.readers import FILE_ID, POSITION, check_once, read_telemetry

NAME = "clients"
INPUT = "client_requests"
DECISIONS_TABLE = "client_request_decisions"
INTERVALS_TABLE = "client_quota_intervals"
STANDING_TABLE = "client_quota_standing"


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


def run_stage(ctx: StageContext, config: ClientQuotaConfig, settings: ClientQuotaSettings,
              storage_decisions: DataFrame | None) -> StageResult:
    """Measure and throttle every request; `storage_decisions` when the storage stage ran."""
    path = ctx.find_input(INPUT)
    assert path is not None, "the runner runs a stage only when its input is present"
    storage_combined = settings.storage_combined
    spark = ctx.spark
    out = ctx.out_dir

    with ctx.progress.step("clients: reading client requests"):
        # each row's file and position break ties between requests of one sharing group at the
        # same millisecond (`_file`, `_row`). Checked in one scan; text inputs are cached (their
        # row ids must not change between the scans that resolve the keys and evaluate the
        # requests), Parquet is scanned again (its row index is the same on every scan)
        checked = check_once(read_telemetry(spark, CLIENT_REQUESTS, path, position=True),
                             out / "quarantine" / CLIENT_REQUESTS.name)
        counts = checked.counts

    factors, decision_rows = _factor_table(storage_decisions)
    with ctx.progress.step("clients: measuring rates and throttle times"):
        requests = (checked.used.withColumnRenamed(FILE_ID, "_file").withColumnRenamed(POSITION, "_row")
                    .withColumn("config_id", F.lit(0).cast("long")))
        keys = resolve_quotas(requests, quota_table(spark, {0: config}), storage_combined).persist()
        try:
            decisions = evaluate_requests(requests, keys, settings, factors)
            decisions.drop("config_id", "_file", "_row").write.mode("overwrite").parquet(
                str(out / DECISIONS_TABLE))
        finally:
            keys.unpersist()
            checked.release()
        decisions = _read_back(spark, out / DECISIONS_TABLE)

    with ctx.progress.step("clients: intervals and standing"):
        intervals = interval_rows(decisions, settings.interval_ms, settings.quota_value_metric)
        intervals.drop("config_id").write.mode("overwrite").parquet(str(out / INTERVALS_TABLE))
        intervals = _read_back(spark, out / INTERVALS_TABLE)
        standing_rows(intervals).drop("config_id").write.mode("overwrite").parquet(str(out / STANDING_TABLE))
        standing = _read_back(spark, out / STANDING_TABLE)
        totals = _totals(decisions)
        by_standing = {r["standing"]: r["n"] for r in standing.groupBy("standing").agg(
            F.count(F.lit(1)).alias("n")).collect()}
        standing_list = _report_standing(standing)

    with ctx.progress.step("clients: metrics and report"):
        ctx.registry.register(client_metrics.ClientMetrics(*_metric_rows(intervals, standing),
                                                           settings.quota_value_metric))
        summary = {**totals, "sharing_groups": sum(by_standing.values()),
                   "over_quota_groups": by_standing.get("over", 0),
                   "near_quota_groups": by_standing.get("near", 0),
                   "settings": _settings_summary(settings),
                   "quota_entities": len(config)}
        sections = client_report.build_sections(client_report.ClientsReportData(
            standing_list, summary, _throttled_intervals(intervals, standing_list),
            _storage_report(intervals, standing_list, decision_rows, settings, config)
            if storage_combined else None))
    return StageResult(NAME, summary, [counts], sections, _console(summary, standing_list, settings))


def _report_standing(standing: DataFrame, top: int = client_report.TOP) -> list[dict[str, Any]]:
    """The standing rows the report and console use: the groups furthest over and nearest to their
    quota, the most throttled, and the busiest produce groups (not every sharing group)."""
    u = F.col("utilisation_max_pct")
    picks = [
        standing.where(F.col("standing") == "over").orderBy(u.desc(), *KEY).limit(top),
        standing.where(F.col("standing").isin("near", "under")).orderBy(u.desc(), *KEY).limit(top),
        standing.where(F.col("throttle_time_total_ms") > 0).orderBy(
            F.col("throttle_time_total_ms").desc(), *KEY).limit(5),
        standing.where((F.col("quota_type") == PRODUCE) & F.col("quota_limit_min").isNotNull()).orderBy(
            F.col("rate_max").desc(), *KEY).limit(5),
    ]
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    for pick in picks:
        for r in pick.collect():
            rows[tuple(r[k] for k in KEY)] = r.asDict()
    return list(rows.values())


def _metric_rows(intervals: DataFrame, standing: DataFrame) -> tuple[list[dict[str, Any]],
                                                                      list[dict[str, Any]]]:
    """Per sharing group: its last interval (gauges) and its totals (counters), in one query."""
    fields = ["rate", "throttle_time_avg_ms", "quota_limit", "utilisation_pct", "tokens"]
    if "quota_value" in intervals.columns:
        fields.append("quota_value")
    last = intervals.groupBy(*KEY).agg(F.max_by(F.struct(*fields), "interval_start_ms").alias("last"))
    rows = (last.select(*KEY, "last.*")
            .join(standing.select(*KEY, "requests", "throttled_requests", "throttle_time_total_ms"), on=KEY)
            .toPandas().to_dict("records"))
    for row in rows:
        for name in fields:
            value = row[name]
            if value is not None and value != value:  # NaN from pandas: a null
                row[name] = None
    return rows, rows


def _read_back(spark: SparkSession, path: Path) -> DataFrame:
    """A table just written, read back (so later steps do not recompute it), with `config_id` 0."""
    return spark.read.parquet(str(path)).withColumn("config_id", F.lit(0).cast("long"))


def _totals(decisions: DataFrame) -> dict[str, Any]:
    rows = decisions.groupBy("quota_type").agg(
        F.count(F.lit(1)).alias("requests"),
        F.count(F.when(F.col("recorded"), 1)).alias("recorded"),
        F.count(F.when(F.col("violated"), 1)).alias("violated"),
        F.count(F.when(F.col("throttled"), 1)).alias("throttled"),
        F.sum(F.col("throttle_time_ms").cast("long")).alias("throttle_ms"),
        F.min("throttle_factor").alias("factor_min"),
    ).collect()
    by_type = {r["quota_type"]: {"requests": r["requests"], "recorded": r["recorded"],
                                 "violated": r["violated"], "throttled": r["throttled"],
                                 "throttle_time_total_ms": int(r["throttle_ms"] or 0)} for r in rows}
    factors = [r["factor_min"] for r in rows if r["factor_min"] is not None]
    return {
        "requests": sum(v["requests"] for v in by_type.values()),
        "recorded_requests": sum(v["recorded"] for v in by_type.values()),
        "violated_requests": sum(v["violated"] for v in by_type.values()),
        "throttled_requests": sum(v["throttled"] for v in by_type.values()),
        "throttle_time_total_ms": sum(v["throttle_time_total_ms"] for v in by_type.values()),
        "throttle_factor_min": min(factors) if factors else None,
        "by_quota_type": by_type,
    }


def _throttled_intervals(intervals: DataFrame, standing: list[dict[str, Any]]) -> list[dict[str, Any]]:
    top = sorted((r for r in standing if r["throttle_time_total_ms"] > 0),
                 key=lambda r: -r["throttle_time_total_ms"])[:5]
    return _intervals_of(intervals, top)


def _intervals_of(intervals: DataFrame, groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if not groups:
        return []
    condition = None
    for g in groups:
        this = ((F.col("broker_id") == g["broker_id"]) & (F.col("quota_type") == g["quota_type"])
                & (F.col("user") == g["user"]) & (F.col("client_id") == g["client_id"]))
        condition = this if condition is None else condition | this
    return [r.asDict() for r in intervals.where(condition).collect()]


def _storage_report(intervals: DataFrame, standing: list[dict[str, Any]],
                    decision_rows: list[dict[str, Any]], settings: ClientQuotaSettings,
                    config: ClientQuotaConfig) -> dict[str, Any]:
    """The storage section's data: decisions, the busiest produce groups' intervals, and the produce
    groups whose limit a factor below 1 lowered most often (base: their quota before the factor)."""
    below = F.col("throttle_factor_min") < 1.0
    impact = (intervals.where(F.col("quota_type") == PRODUCE).groupBy(*KEY).agg(
        F.min("quota_limit_min").alias("quota_limit_min"),
        F.count(F.when(below, 1)).alias("factor_intervals"),
        F.sum(F.when(below, F.col("throttled_requests")).otherwise(0)).alias("throttled_under_factor"))
        .where(F.col("factor_intervals") > 0)
        .orderBy(F.col("throttled_under_factor").desc(), F.col("factor_intervals").desc(), *KEY)
        .limit(15).collect())
    busiest = sorted((r for r in standing if r["quota_type"] == PRODUCE and r["quota_limit_min"] is not None),
                     key=lambda r: -r["rate_max"])[:5]
    resolver = QuotaResolver(config)
    rows = []
    for r in impact:
        configured = resolver.limit(PRODUCE, Tags(r["user"], r["client_id"])).limit
        rows.append({**r.asDict(), "base": settings.static_produce if configured is None else configured})
    return {"decisions": decision_rows, "produce_intervals": _intervals_of(intervals, busiest),
            "impact": rows, "static_produce": settings.static_produce}


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
