"""`quotaplane notices evaluate`: producer throttle notices with the reference engine (no Spark).

Prints one JSON line per notice, broker by broker (by name), in event order: `ts_ms`, `broker`,
`connection_id`, `producer_id`, `topic`, `reason`, `pause_for_millis`, `receipt`
(`in_time|late|unsupported`), `connection_paused_ms`, `stalled_topics` and the last two without
notices (today's behaviour). See docs/notices.md.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from quotaplane.core.policy import Evaluator, ReferenceEvaluation
from quotaplane.core.telemetry_files import read_input
from quotaplane.notices.config import load_notice_config
from quotaplane.notices.engine.evaluate import Notice, evaluate
from quotaplane.notices.records import PRODUCER_TRAFFIC

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry


class NoticesEvaluator(Evaluator):
    help = "decide the throttle notices producers get, and what the connection pauses cost"
    description = (
        "Print one JSON line per notice: ts_ms, broker, connection_id, producer_id, topic, reason "
        "(PIP-385 ThrottlingReason), pause_for_millis, receipt (in_time|late|unsupported), "
        "connection_paused_ms, stalled_topics, connection_paused_ms_without_notices and "
        "stalled_topics_without_notices.")

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("--config", required=True, type=Path, metavar="FILE",
                       help="a .properties file in Pulsar's names: brokerPublisherThrottlingMaxByteRate, "
                       "maxPendingPublishRequestsPerConnection, throttleProducerReceiptWaitTimeMillis, "
                       "topic.<topic>.publishMaxByteRate, resourcegroup.<name>.publishRateInBytes, ...")
        p.add_argument("--traffic", required=True, type=Path, metavar="PATH",
                       help="producer traffic (JSON Lines, CSV or Parquet; a file or a folder): ts_ms, "
                       "connection_id, producer_id, topic, bytes, messages, supports_throttle, "
                       "receipt_latency_ms, publish_latency_ms, broker")

    def evaluate(self, args: argparse.Namespace) -> NoticesEvaluation:
        config = load_notice_config(args.config)
        return NoticesEvaluation(evaluate(config, read_input(args.traffic, PRODUCER_TRAFFIC)))


class NoticesEvaluation(ReferenceEvaluation):
    def __init__(self, notices: list[Notice]) -> None:
        self.notices = notices

    def rows(self) -> Iterable[dict[str, Any]]:
        return (n.as_dict() for n in self.notices)

    def register_metrics(self, registry: CollectorRegistry) -> None:
        from quotaplane.notices.engine.evaluate import compare
        from quotaplane.notices.metrics import NoticeMetrics

        registry.register(NoticeMetrics(compare(self.notices)))
