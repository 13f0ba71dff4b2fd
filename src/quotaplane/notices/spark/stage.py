"""The producer throttle notice stage of `quotaplane run` (spec: pip-385-producer-throttle-protocol).

Reads `producer_traffic` (the runner calls it only when that input is present and `--notices` is
given), decides every notice with Spark (`evaluate.evaluate_brokers`: one pandas group per broker
around the numpy kernel), and writes under `ctx.out_dir` (Parquet):
- `notice_decisions/`: one row per notice (docs/notices.md, Outputs);
- `notice_comparison/`: per broker, topic and reason: notices, receipts, and the connection pauses
  and stalled topics with notices against without (today's behaviour);
- `quarantine/producer_traffic/`: rejected rows with their reasons.
Metrics and the report come from the comparison rows and a per-bucket timeline: small aggregates
each broker's group sums as it decides its notices (`aggregates`), observed while they are
written, never a second pass over the traffic or the notices. The stage provides nothing to other
policies.
"""

from __future__ import annotations

from typing import Any

from quotaplane.core.policy import Outputs, StageContext, StageResult
from quotaplane.core.spark.driver_reads import read_run_input
from quotaplane.core.spark.local_table import local_table
from quotaplane.core.spark.readers import CountedInUse
from quotaplane.core.spark.side_by_side import side_by_side
from quotaplane.core.spark.tables import write_parquet
from quotaplane.notices.config import NoticeConfig
from quotaplane.notices.engine.evaluate import RECEIPTS
from quotaplane.notices.metrics import NoticeMetrics
from quotaplane.notices.records import INPUTS
from quotaplane.notices.report import NoticeReportData, build_sections, notice_kpis
from quotaplane.notices.spark.evaluate import (
    COMPARISON_SCHEMA,
    evaluate_brokers,
    observe_aggregates,
    observed_aggregates,
)

TRAFFIC = INPUTS[0]
INPUT = TRAFFIC.name
NAME = "notices"
_SUMMED = ("pause_for_millis_total", "connection_paused_ms", "connection_paused_ms_without_notices",
           "stalled_topics", "stalled_topics_without_notices")


def run_stage(ctx: StageContext, config: NoticeConfig, outputs: Outputs) -> StageResult:
    """Decide every notice of the run's producer traffic (`outputs`: nothing needed or provided)."""
    path = ctx.find_input(INPUT)
    assert path is not None, "the runner runs a stage only when its input is present"
    out = ctx.out_dir
    with ctx.progress.step("notices: read traffic, notices per broker (token buckets, connection limits)"):
        # one pass over the traffic: the action that writes the notices counts the input's rows and
        # observes each broker's aggregates; no job reads either again
        read = read_run_input(ctx, TRAFFIC.schema, path)
        counted = CountedInUse(read)
        notices, observation = observe_aggregates(read.checked.transform(evaluate_brokers(config, counted)))
        write_parquet(notices, out / "notice_decisions")
        counts = counted.counts(out / "quarantine" / INPUT)
    with ctx.progress.step("notices: comparison, metrics and report"):
        rows, timeline, bucket_ms = observed_aggregates(observation)
        ctx.registry.register(NoticeMetrics(rows))
        summary = summary_of(config, rows)
        notes = [] if not counts.quarantined else [
            f"{counts.quarantined} producer traffic rows were quarantined (quarantine/{INPUT})."]
        data = NoticeReportData(notice_kpis(rows), rows, timeline, bucket_ms, notes)
        # the comparison table is written while the report is drawn
        sections, _ = side_by_side(lambda: build_sections(data), lambda: write_parquet(
            local_table(ctx.spark, rows, COMPARISON_SCHEMA), out / "notice_comparison"))
    summary["input"] = counts.as_dict()
    return StageResult(NAME, summary, [counts], sections, [_console(summary, counts.used)])


def summary_of(config: NoticeConfig, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """`summary.json`'s `notices`: the totals of the comparison rows, by reason and by receipt."""
    reasons: dict[str, int] = {}
    for r in rows:
        reasons[r["reason"]] = reasons.get(r["reason"], 0) + r["notices"]
    out: dict[str, Any] = {
        "throttle_producer_receipt_wait_time_millis": config.receipt_wait_ms,
        "pause_rule": config.pause_rule,
        "notices": sum(r["notices"] for r in rows),
        "brokers": len({r["broker"] for r in rows}),
        "topics_throttled": len({(r["broker"], r["topic"]) for r in rows}),
        "by_reason": dict(sorted(reasons.items())),
        "by_receipt": {receipt: sum(r[receipt] for r in rows) for receipt in RECEIPTS},
    }
    out.update({column: sum(r[column] for r in rows) for column in _SUMMED})
    return out


def _console(summary: dict[str, Any], used: int) -> str:
    receipts = summary["by_receipt"]
    return (f"notices: {summary['notices']:,} throttle notices from {used:,} publish requests "
            f"({receipts['in_time']:,} answered in time, {receipts['late']:,} late, "
            f"{receipts['unsupported']:,} to clients without the feature); connections paused "
            f"{summary['connection_paused_ms'] / 1000:,.1f} s with notices against "
            f"{summary['connection_paused_ms_without_notices'] / 1000:,.1f} s without, "
            f"{summary['stalled_topics']:,} against {summary['stalled_topics_without_notices']:,} "
            "innocent topics stalled")
