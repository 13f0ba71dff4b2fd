"""The topic bytes-in quota stage of `quotaplane run` (spec: kafka-topic-bytes-in-quota).

Reads `topic_requests` (the runner calls it only when that input is present and the `.properties`
config is loaded), judges every request with Spark (see `evaluate`), and writes under `ctx.out_dir`
(Parquet):
- `topic_decisions/`: one row per request: decision, reason, the rates and thresholds it was judged by;
- `topic_intervals/`: per broker, topic and interval: accepted, throttled and error requests, bytes
  and average rates, the highest one-minute rates and the threshold range;
- `topic_dropped/`: the dropped-request log (throttled and error requests, with reason and message);
- `topic_meters/`: per broker and per topic on it, the three meters' counts and one-minute rates and
  the threshold at the end of the telemetry (the last request's time);
- `topic_threshold_changes/`: every configured threshold setting, accepted or rejected (with why);
- `quarantine/topic_requests/`: rejected rows with their reasons.
It registers the bytes-in, throttled and error meters in `ctx.registry`. No other policy needs the
topic decisions: the stage provides nothing to `Outputs`.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from quotaplane.core.policy import Outputs, StageContext, StageResult
from quotaplane.core.spark.driver_reads import read_run_input
from quotaplane.core.spark.local_table import local_table
from quotaplane.core.spark.readers import UsedAggregate, check_once
from quotaplane.core.spark.session import shuffle_partitions, task_slots, tasks_for
from quotaplane.core.spark.side_by_side import side_by_side
from quotaplane.core.spark.tables import read_written, write_parquet
from quotaplane.core.units import size_text
from quotaplane.topics.config import TopicQuotaConfig, change_error
from quotaplane.topics.engine.decision import DECISIONS
from quotaplane.topics.engine.evaluate import MeterSnapshot
from quotaplane.topics.metrics import TopicMetrics
from quotaplane.topics.records import INPUTS
from quotaplane.topics.report import build_sections
from quotaplane.topics.spark.evaluate import (
    decisions,
    evaluate_requests,
    meter_table,
    meters,
    observe_meters,
    observed_meters,
)
from quotaplane.topics.spark.intervals import dropped_log, topic_intervals
from quotaplane.topics.spark.report_data import broker_topic_totals, collect_report_data, decision_counts

REQUESTS = INPUTS[0]
INPUT = REQUESTS.name
NAME = "topics"
# requests per task of the per-broker groups: below it, one task per task slot (docs/performance.md,
# "The topic groups in as many tasks as the requests need")
ROWS_PER_TASK = 1_000_000

_CHANGES = T.StructType([
    T.StructField("key", T.StringType(), False),
    T.StructField("topic", T.StringType(), False),
    T.StructField("ts_ms", T.LongType(), True),
    T.StructField("threshold", T.LongType(), True),
    T.StructField("accepted", T.BooleanType(), False),
    T.StructField("explicit_sum", T.LongType(), False),
    T.StructField("error", T.StringType(), True),
])


def run_stage(ctx: StageContext, config: TopicQuotaConfig, outputs: Outputs) -> StageResult:
    """Judge every produce request of the run (`outputs`: nothing needed, nothing provided)."""
    path = ctx.find_input(INPUT)
    assert path is not None, "the runner runs a stage only when its input is present"
    out = ctx.out_dir
    with ctx.progress.step("topics: read produce requests"):
        # checked in one scan (a text input is cached: the requests are scanned again to judge them)
        # the first and last request's time by the same scan
        read = read_run_input(ctx, REQUESTS.schema, path)
        checked = check_once(read, out / "quarantine" / INPUT,
                             over_used={"first": UsedAggregate("min", "ts_ms"),
                                        "as_of": UsedAggregate("max", "ts_ms")})
        counts = checked.counts
        as_of = checked.aggregates["as_of"]
    write_parquet(_changes(ctx.spark, config), out / "topic_threshold_changes")
    rejected = [str(change_error(c)) for c in config.rejected_changes]
    if as_of is None:
        checked.release()
        summary = _summary_of(config, [], [], None)
        summary["input"] = counts.as_dict()
        return StageResult(NAME, summary, [counts], [], [f"topics: no usable produce request in {path}"])
    with ctx.progress.step("topics: judge requests (meters per broker)"):
        # one pass of the per-broker groups: the decisions are written, the meters (a few rows per
        # broker) observed on the way and written from the driver
        tasks = judging_tasks(ctx.spark, counts.used)
        rows = checked.used.transform(evaluate_requests(config, int(as_of), tasks))
        observed, observation = observe_meters(rows)
        write_parquet(decisions(observed), out / "topic_decisions")
        meter_rows = observed_meters(observation)
        meter_schema, decided_schema = meters(rows).schema, decisions(rows).schema
        checked.release()
    decided = read_written(ctx.spark, out / "topic_decisions", decided_schema)
    with ctx.progress.step("topics: meters, intervals and dropped-request log"):
        intervals_path = out / "topic_intervals"
        intervals = decided.transform(topic_intervals(config.interval_ms))

        def from_decisions() -> None:
            write_parquet(intervals, intervals_path)
            write_parquet(decided.transform(dropped_log(config.message_max_bytes)), out / "topic_dropped")

        # the meters are a small table from the driver: written while the decisions are scanned
        side_by_side(from_decisions,
                     lambda: write_parquet(meter_table(ctx.spark, meter_rows, meter_schema),
                                           out / "topic_meters"))
        intervals = read_written(ctx.spark, intervals_path, intervals.schema)
    with ctx.progress.step("topics: metrics and report"):
        totals = broker_topic_totals(decided)
        by_decision = decision_counts(totals)
        requests = {(r["broker_id"], r["topic"], r["decision"]): r["requests"] for r in by_decision}
        ctx.registry.register(TopicMetrics(
            meter_rows, requests, {"accepted": len(config.accepted_changes),
                                   "rejected": len(config.rejected_changes)}))
        summary = _summary_of(config, by_decision, meter_rows, int(as_of))
        kpis = [("requests", f"{summary['requests']:,}"),
                ("throttled requests", f"{summary['throttled_requests']:,}"),
                ("throttled bytes", size_text(summary["throttled_bytes"])),
                ("error requests", f"{summary['error_requests']:,}"),
                ("topics over threshold", summary["topics_over_threshold"]),
                ("brokers", summary["brokers"])]
        notes = [] if not counts.quarantined else [
            f"{counts.quarantined} produce request rows were quarantined (quarantine/{INPUT})."]
        span = (int(checked.aggregates["first"]), int(as_of))
        sections = build_sections(collect_report_data(totals, intervals, config.interval_ms, kpis,
                                                      rejected, notes, span))
    summary["input"] = counts.as_dict()
    console = [
        f"topics: {summary['requests']:,} produce requests on {summary['brokers']} broker(s): "
        f"{summary['accepted_requests']:,} accepted, {summary['throttled_requests']:,} throttled "
        f"({summary['throttled_bytes']:,} bytes), {summary['error_requests']:,} errors; "
        f"{summary['topics_over_threshold']} topic(s) over threshold",
    ]
    if rejected:
        console.append(f"topics: {len(rejected)} threshold change(s) rejected (topic_threshold_changes/)")
    return StageResult(NAME, summary, [counts], sections, console)


def judging_tasks(spark: SparkSession, requests: int) -> int:
    """The tasks of the per-broker groups for `requests` used requests: one per `ROWS_PER_TASK`
    begun, at least one per task slot (at least the shuffle partitions when the cluster's slots are
    unknown: Spark Connect), rounded up to a multiple of the slots. The shuffle partitions do not
    cap them: a task holds its requests in memory at once (`evaluate.judge_brokers`)."""
    limit, slots = shuffle_partitions(spark), task_slots(spark)
    return tasks_for(requests, ROWS_PER_TASK, None, slots, at_least=limit if slots is None else slots)


def _changes(spark: SparkSession, config: TopicQuotaConfig) -> DataFrame:
    return local_table(spark, config.changes, _CHANGES)


def _summary_of(config: TopicQuotaConfig, by_decision: list[Any], meter_rows: list[MeterSnapshot],
                as_of: int | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "total_bytes_in_per_sec_threshold": config.total_threshold,
        "message_max_bytes": config.message_max_bytes,
        "interval_ms": config.interval_ms,
        "as_of_ms": as_of,
        "brokers": sum(1 for m in meter_rows if m.topic is None),
        "broker_topics": sum(1 for m in meter_rows if m.topic is not None),
        "requests": sum(int(r["requests"]) for r in by_decision),
    }
    for decision in DECISIONS:
        rows = [r for r in by_decision if r["decision"] == decision]
        out[f"{decision}_requests"] = sum(int(r["requests"]) for r in rows)
        out[f"{decision}_bytes"] = sum(int(r["bytes"]) for r in rows)
    out["topics_over_threshold"] = len({(r["broker_id"], r["topic"]) for r in by_decision
                                        if r["decision"] == "throttled"})
    out["threshold_changes_accepted"] = len(config.accepted_changes)
    out["threshold_changes_rejected"] = len(config.rejected_changes)
    return out
