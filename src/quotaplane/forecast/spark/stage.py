"""The forecast stage of `quotaplane run`: `storage_forecast` and `backlog_forecast`.

As of the last observation of each input (docs/forecast.md): the volumes (read again, only the
fit window's rows are used; their quarantine is the storage stage's) and `partition_sizes` (checked
here, its quarantine under `quarantine/partition_sizes`) give `storage_forecast`; the backlog
stage's checks give `backlog_forecast`. Both tables are one row per volume or topic, so the
metrics, the summary and the report come from them and from the history of the few volumes
plotted.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from quotaplane.backlog.outputs import BacklogChecks
from quotaplane.core.policy import Outputs, StageContext, StageResult
from quotaplane.core.spark.driver_reads import read_run_input
from quotaplane.core.spark.readers import ReadCounts, check_once
from quotaplane.core.spark.tables import read_written, write_parquet
from quotaplane.forecast.config import ForecastConfig
from quotaplane.forecast.engine.backlog import BacklogForecast
from quotaplane.forecast.engine.volumes import VolumeForecast
from quotaplane.forecast.metrics import ForecastMetrics
from quotaplane.forecast.records import PARTITION_SIZES
from quotaplane.forecast.report import (
    PLOTTED,
    ForecastReportData,
    build_sections,
    next_hard_limit,
    ranked_volumes,
)
from quotaplane.forecast.spark.backlog import forecast_backlogs
from quotaplane.forecast.spark.volumes import forecast_volumes, in_window
from quotaplane.storage.outputs import LastVolumeTime
from quotaplane.storage.records import VOLUMES

NAME = "forecast"
HISTORY_POINTS = 240
HISTORY_WINDOWS = 2  # the report plots the observed history over this many fit windows


def _plain(row: Any) -> dict[str, Any]:
    out = row.asDict(recursive=True)
    for key in ("top_contributors", "top_partitions"):
        if key in out:
            out[key] = tuple(out[key] or ())
    return out


def _last_ts(df: DataFrame, column: str) -> int | None:
    value = df.agg(F.max(column)).first()[0]
    return None if value is None else int(value)


History = dict[Any, list[tuple[int, int]]]


def _volume_forecasts(ctx: StageContext, config: ForecastConfig,
                      outputs: Outputs) -> tuple[list[dict[str, Any]], list[ReadCounts], History]:
    path = ctx.find_input("volumes")
    if config.storage is None or path is None:
        return [], [], {}
    volumes = read_run_input(ctx, VOLUMES, path).used
    last = outputs.get(LastVolumeTime)  # the storage stage read the same volumes
    at_ms = last.ts_ms if last is not None else _last_ts(volumes, "ts")
    if at_ms is None:
        return [], [], {}
    counts: list[ReadCounts] = []
    sizes = None
    checked = None
    sizes_path = ctx.find_input("partition_sizes")
    if sizes_path is not None:
        checked = check_once(read_run_input(ctx, PARTITION_SIZES, sizes_path),
                             ctx.out_dir / "quarantine" / PARTITION_SIZES.name)
        counts.append(checked.counts)
        sizes = checked.used
    # one more read of the volumes after their last time: the plotted span (which holds the fit
    # window), cached for the forecast and the plots
    recent = in_window(volumes, "ts", at_ms, HISTORY_WINDOWS * config.settings.window_ms).persist()
    try:
        table = forecast_volumes(recent, sizes, config.storage, config.settings, at_ms)
        write_parquet(table, ctx.out_dir / "storage_forecast")
        written = read_written(ctx.spark, ctx.out_dir / "storage_forecast", table.schema)
        rows = [_plain(r) for r in written.collect()]
        bucket_ms = max(1, HISTORY_WINDOWS * config.settings.window_ms // HISTORY_POINTS)
        return rows, counts, _histories(recent, ranked_volumes(rows)[:PLOTTED], bucket_ms)
    finally:
        if checked is not None:
            checked.release()
        recent.unpersist()


def _histories(recent: DataFrame, rows: list[dict[str, Any]], bucket_ms: int) -> History:
    """The plotted volumes' available bytes in `recent` (the last `HISTORY_WINDOWS` fit windows),
    at most `HISTORY_POINTS` points each (the least available bytes per time bucket)."""
    if not rows:
        return {}
    key = F.concat_ws("/", F.col("broker_id").cast("string"), "log_dir", "cluster")
    wanted = [f"{r['broker_id']}/{r['log_dir']}/{r['cluster']}" for r in rows]
    picked = recent.where(key.isin(wanted))
    bucket = (F.col("ts") - F.col("ts") % bucket_ms).alias("b")
    points = (picked.groupBy("cluster", "broker_id", "log_dir", bucket)
              .agg(F.max("ts").alias("ts"), F.min("available_bytes").alias("a")).collect())
    out: dict[Any, list[tuple[int, int]]] = {}
    for p in sorted(points, key=lambda p: p["ts"]):
        out.setdefault((p["cluster"], p["broker_id"], p["log_dir"]), []).append((p["ts"], p["a"]))
    return out


def _backlog_forecasts(ctx: StageContext, config: ForecastConfig, outputs: Outputs) -> list[dict[str, Any]]:
    checks = outputs.get(BacklogChecks)
    if not config.backlog or checks is None:
        return []
    if checks.last_ts_ms is None:
        return []
    table = forecast_backlogs(checks.checks, config.settings, checks.last_ts_ms)
    write_parquet(table, ctx.out_dir / "backlog_forecast")
    written = read_written(ctx.spark, ctx.out_dir / "backlog_forecast", table.schema)
    return [_plain(r) for r in written.collect()]


def run_stage(ctx: StageContext, config: ForecastConfig, outputs: Outputs) -> StageResult:
    with ctx.progress.step("forecast: volumes"):
        volumes, counts, histories = _volume_forecasts(ctx, config, outputs)
    with ctx.progress.step("forecast: backlogs"):
        backlogs = _backlog_forecasts(ctx, config, outputs)
    with ctx.progress.step("forecast: metrics and report"):
        ctx.registry.register(ForecastMetrics([VolumeForecast(**v) for v in volumes],
                                              [BacklogForecast(**b) for b in backlogs]))
        data = ForecastReportData(volumes, backlogs, histories, config.window, config.horizon,
                                  config.settings.horizon_seconds)
        sections = build_sections(data)
    summary = _summary(ctx, volumes, backlogs, counts)
    console = [f"forecast: {len(volumes)} volumes, {summary['volumes_reaching_hard_limit']} at or reaching "
               f"the hard limit within {config.horizon}; {len(backlogs)} backlog topics, "
               f"{summary['backlogs_reaching_quota']} at or reaching a quota"]
    upcoming = next_hard_limit(volumes)
    if upcoming is not None:
        console.append(upcoming)
    return StageResult(NAME, summary, counts, sections, console)


def _summary(ctx: StageContext, volumes: list[dict[str, Any]], backlogs: list[dict[str, Any]],
             counts: list[ReadCounts]) -> dict[str, Any]:
    outputs = {}
    if volumes:
        outputs["storage_forecast"] = str(ctx.published / "storage_forecast")
    if backlogs:
        outputs["backlog_forecast"] = str(ctx.published / "backlog_forecast")
    return {
        "volumes": len(volumes),
        "volumes_reaching_soft_limit": sum(1 for v in volumes if v["seconds_to_soft"] is not None),
        "volumes_reaching_hard_limit": sum(1 for v in volumes if v["seconds_to_hard"] is not None),
        "volumes_reaching_full": sum(1 for v in volumes if v["seconds_to_full"] is not None),
        "backlog_topics": len(backlogs),
        "backlogs_reaching_quota": sum(1 for b in backlogs if b["seconds_to_quota"] is not None),
        "inputs": [c.as_dict() for c in counts],
        "outputs": outputs,
    }
