"""Storage volume quotas in the live service: each round's `volumes`, `membership` and
`collection_errors` rows decided by the reference engine (spec: strimzi-cluster-wide-volume-quotas).

The rows are those the readers' rules accept (the service leaves out, and counts, a volume reporting
more usable than total bytes, a zero-capacity or negative volume), grouped into the round exactly as the
batch pipeline groups them (`group_rounds`) and evaluated by the `RoundEvaluator` the backtest is
checked against, so the live decision equals `quotaplane run` over the landed rows. An active
broker whose volumes were all left out has no data: the spec's fallback factor applies with its
reason (missing_broker_data), the round decides on the rest.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from prometheus_client.core import CounterMetricFamily, Metric

from quotaplane.core.live import Decider, LivePart, Observed, Outcome
from quotaplane.storage.config import StorageConfig, StorageRunConfig
from quotaplane.storage.engine.decisions import Decision
from quotaplane.storage.engine.rounds import Round, RoundEvaluator, group_rounds
from quotaplane.storage.metrics import StorageMetrics, state_from_decision
from quotaplane.storage.records import COLLECTION_ERRORS, MEMBERSHIP, VOLUMES

INPUTS = (VOLUMES.name, MEMBERSHIP.name, COLLECTION_ERRORS.name)
NO_OBSERVATION = "NO_OBSERVATION"  # a round in which no source observed the storage inputs


class StorageDecider:
    """The storage decisions of one service, round by round (the strimzi dialect's throttle state
    carries over between rounds in the `RoundEvaluator`)."""

    def __init__(self, config: StorageConfig) -> None:
        self.config = config
        self.evaluator = RoundEvaluator(config)
        self.decision: Decision | None = None
        self.row: dict[str, Any] | None = None
        self.cluster = ""
        self.fallbacks: Counter[str] = Counter()
        self.collection_errors: Counter[str] = Counter()

    def rounds(self, observed: Observed) -> list[Round]:
        """The round(s) of the observed rows as the batch pipeline groups them."""
        rounds = group_rounds(observed.of(VOLUMES.name), observed.of(MEMBERSHIP.name),
                              observed.of(COLLECTION_ERRORS.name), self.config.check_interval_ms)
        if not rounds:
            rounds = [Round(observed.cluster, observed.number, None, observed.ts_ms, (), None,
                            NO_OBSERVATION)]
        return sorted(rounds, key=lambda rd: rd.order)

    def decide(self, observed: Observed, before: Mapping[str, Outcome]) -> Outcome:
        rounds = self.rounds(observed)
        rows: list[dict[str, Any]] = []
        decided: list[tuple[Decision, dict[str, Any]]] = []
        for rd in rounds:
            decided = self.evaluator.evaluate(rd)
            rows.extend(row for _, row in decided)
            if rd.error is not None:
                self.collection_errors[rd.error] += 1
        decision, row = decided[0]
        if decision.fallback_applied and decision.fallback_reason:
            self.fallbacks[decision.fallback_reason] += 1
        self.decision, self.row, self.cluster = decision, row, rounds[-1].cluster or observed.cluster
        volume = None
        if row["throttling_broker_id"] is not None:
            volume = {"broker_id": row["throttling_broker_id"], "log_dir": row["throttling_log_dir"]}
        log = {"throttle_factor": row["throttle_factor"], "throttling_volume": volume,
               "fallback_reason": row["fallback_reason"], "collection_error": row["collection_error"]}
        return Outcome(tables={"storage_decisions": rows}, document={**row, "round": observed.number},
                       log=log, value=decision)

    def warm(self, observed: Observed) -> None:
        for rd in self.rounds(observed):
            self.evaluator.evaluate(rd)

    def metrics(self) -> Iterator[Metric]:
        if self.decision is not None:
            state = state_from_decision(self.decision, self.config, label="live", cluster=self.cluster)
            state.fallbacks = dict(self.fallbacks)
            yield from StorageMetrics([state]).collect()
        errors = CounterMetricFamily("quotaplane_storage_collection_errors",
                                     "Failed collection rounds, by reason.", labels=["reason"])
        for reason, count in sorted(self.collection_errors.items()):
            errors.add_metric([reason], count)
        yield errors


def _build(configs: Mapping[str, Any]) -> Decider | None:
    run_config: StorageRunConfig | None = configs.get("storage")
    return None if run_config is None else StorageDecider(run_config.main)


def _memory_ms(run_config: StorageRunConfig) -> int:
    """The strimzi dialect keeps observations for its validity duration; the others decide each
    round alone."""
    validity = run_config.main.validity_ns
    return validity // 1_000_000 if validity and run_config.main.evaluation == "strimzi" else 0


LIVE = LivePart(inputs=INPUTS, endpoint="/decision", build=_build, memory_ms=_memory_ms)


def decision_of(outcomes: Mapping[str, Outcome]) -> Decision | None:
    """The storage decision among a round's outcomes (None when storage did not decide)."""
    outcome = outcomes.get("storage")
    return outcome.value if outcome is not None else None


def throttling_broker(outcomes: Mapping[str, Outcome]) -> int | None:
    decision = decision_of(outcomes)
    return decision.throttling_broker_id if decision is not None else None

