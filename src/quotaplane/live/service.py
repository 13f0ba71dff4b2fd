"""The live control loop: every round collect (or replay), decide, enforce, land, export.

One round: the next collection round (`KafkaCollector` or the replayed telemetry); the storage
reference engine decides (`RoundEvaluator`, the same code as the batch backtest's oracle); the
client quotas are brought to the factor (`enforce.plan`: only changed entities are altered; a failed
alteration is retried next round, since the cluster still differs); the state is saved atomically;
the round is landed; the forecast window takes the round's volumes and partition replica sizes and
the volumes are forecast (`quotaplane.live.forecast`); with a notice channel, a round whose factor is
below 1 sends `BrokerProduceQuotaExceeded` notices (`notify`); one structured log line (JSON) is
printed. A stop request (SIGTERM/SIGINT) ends the loop after the current round, with the state flushed.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from quotaplane.forecast.engine.replicas import ReplicaPoint
from quotaplane.forecast.engine.volumes import VolumePoint
from quotaplane.live import enforce
from quotaplane.live.admin import AdminError, ClusterAdmin, QuotaAlteration
from quotaplane.live.collect import Collected, KafkaCollector
from quotaplane.live.forecast import ForecastWindow, round_volumes
from quotaplane.live.landing import Landing
from quotaplane.live.metrics import LiveStatus
from quotaplane.live.state import ServiceState, StateFile
from quotaplane.notices.protocol import Reason
from quotaplane.storage.config import StorageConfig
from quotaplane.storage.engine.rounds import Round, RoundEvaluator

if TYPE_CHECKING:
    from quotaplane.live.notice_channel import NoticeChannel

# (poll id, now ms, throttling broker) -> the next round, None when there is none
RoundSource = Callable[[int, int, "int | None"], "Collected | None"]


@dataclass
class Options:
    interval_s: float
    rounds: int | None = None  # stop after this many rounds (None: until stopped)
    dry_run: bool = False


class _Cursor:
    """Time-ordered points handed out in time slices: `until(t)` gives those not yet given with a
    time up to `t` (the first slice starts after `after_ms`)."""

    def __init__(self, points: Sequence[Any], after_ms: int | None) -> None:
        self.points = points
        self.at = 0 if after_ms is None else bisect_right([p.ts_ms for p in points], after_ms)

    def until(self, ts_ms: int) -> tuple[Any, ...]:
        start = self.at
        while self.at < len(self.points) and self.points[self.at].ts_ms <= ts_ms:
            self.at += 1
        return tuple(self.points[start:self.at])


def replay_source(rounds: list[Round], volumes: Sequence[VolumePoint] | None = None,
                  replicas: Sequence[ReplicaPoint] = (), after_ms: int | None = None,
                  ) -> tuple[RoundSource, Callable[[], float | None]]:
    """A source over recorded rounds, and the event time gap to the next one (seconds).

    With the recorded `volumes` and `replicas` rows (in time order), each round carries those with a
    time after the previous round's (after `after_ms` for the first) up to its own."""
    iterator: Iterator[Round] = iter(rounds)
    position = [0]
    volume_rows = _Cursor(volumes or (), after_ms)
    replica_rows = _Cursor(replicas, after_ms)

    def next_round(poll_id: int, now_ms: int, throttling: int | None) -> Collected | None:
        position[0] += 1
        rd = next(iterator, None)
        if rd is None:
            return None
        return Collected(rd, replica_rows.until(rd.ts), None if volumes is None else volume_rows.until(rd.ts))

    def gap() -> float | None:
        i = position[0]
        return (rounds[i].ts - rounds[i - 1].ts) / 1000 if 0 < i < len(rounds) else None

    return next_round, gap


def kafka_source(collector: KafkaCollector) -> RoundSource:
    return collector.collect


class Service:
    def __init__(self, config: StorageConfig, source: RoundSource, quotas: ClusterAdmin, status: LiveStatus,
                 options: Options, state_file: StateFile | None = None, landing: Landing | None = None,
                 log: TextIO | None = None, sleep: Callable[[float], Any] | None = None,
                 clock: Callable[[], float] = time.time, forecast: ForecastWindow | None = None,
                 notices: NoticeChannel | None = None) -> None:
        self.config = config
        self.source = source
        self.quotas = quotas
        self.status = status
        self.options = options
        self.state_file = state_file
        self.state = state_file.load() if state_file is not None else ServiceState()
        self.landing = landing
        self.log = log
        self.stop = threading.Event()
        self.sleep = sleep if sleep is not None else self.stop.wait
        self.clock = clock
        self.evaluator = RoundEvaluator(config)
        self.forecast = forecast
        self.notices = notices
        self.lock = threading.Lock()  # the HTTP threads read `status` while a round updates it

    def run(self, gap: Callable[[], float | None] | None = None) -> int:
        """Rounds until the source ends, `options.rounds` are done, or a stop is requested."""
        done = 0
        while not self.stop.is_set():
            if self.options.rounds is not None and done >= self.options.rounds:
                break
            if not self.round():
                break
            done += 1
            wait = gap() if gap is not None else self.options.interval_s
            if wait and not self.stop.is_set():
                self.sleep(wait)
        return 0

    def round(self) -> bool:
        """One round; False when the source has no more rounds."""
        started = time.perf_counter()
        number = self.state.rounds + 1
        now_ms = int(self.clock() * 1000)
        last = self.status.decision
        collected = self.source(number, now_ms, last.throttling_broker_id if last is not None else None)
        if collected is None:
            return False
        rd = collected.round
        decided = self.evaluator.evaluate(rd)
        decision, row = decided[0]
        alterations, failed = self._enforce(decision.throttle_factor)
        notified = self.notify(decision.throttle_factor)
        if self.landing is not None:  # landed first: a round redone after a crash overwrites its files
            self.landing.land(number, rd, [r for _, r in decided], collected.replicas)
        self.state.rounds = number
        self.state.last_decision = row
        if self.state_file is not None:
            self.state_file.save(self.state)
        forecasts = None
        if self.forecast is not None:
            self.forecast.add(collected.volumes if collected.volumes is not None else round_volumes(rd),
                              collected.replicas)
            forecasts = self.forecast.forecast()
        with self.lock:
            s = self.status
            s.decision, s.decision_row, s.round, s.rounds = decision, row, number, s.rounds + 1
            if decision.fallback_applied and decision.fallback_reason:
                s.fallbacks[decision.fallback_reason] += 1
            if rd.error is not None:
                s.collection_errors[rd.error] += 1
            s.dropped_replicas.update(collected.dropped)
            if forecasts is not None:
                s.forecasts = forecasts
            s.last_round_unix = self.clock()
            s.last_round_seconds = time.perf_counter() - started
        self._log(number, rd, row, alterations, failed, collected.dropped, notified)
        return True

    def notify(self, factor: float) -> int | str | None:
        """docs/notices.md "The notice channel": while the storage factor cuts produce (< 1), every
        producer registered on the notice channel, except those of excluded principals, is sent
        `BrokerProduceQuotaExceeded` with a pause of one interval (until the next round re-decides);
        none at factor 1. The notices sent, None without a channel, or the error that stopped them
        (the round goes on)."""
        if self.notices is None:
            return None
        if not factor < 1.0:
            return 0
        excluded = self.config.excluded_principals
        try:
            return len(self.notices.throttle(
                reason=Reason.BrokerProduceQuotaExceeded, pause_ms=round(self.options.interval_s * 1000),
                exclude_principals={*excluded, *(f"User:{name}" for name in excluded)}))
        except Exception as exc:  # the channel's failure never stops the control loop
            return f"{type(exc).__name__}: {exc}"

    def _enforce(self, factor: float) -> tuple[list[QuotaAlteration], list[str]]:
        bases = self.state.bases
        try:
            current = self.quotas.client_quotas()
        except AdminError as exc:
            return [], [exc.reason]
        bases.observe(current)
        static = self.config.quotas.produce
        excluded = sorted(self.config.excluded_principals)
        with self.lock:
            self.status.targets = enforce.targets(bases, factor, static, excluded)
        changes = enforce.plan(bases, current, factor, static, excluded)
        if not changes:
            return [], []
        if self.options.dry_run:
            with self.lock:
                self.status.alterations["dry_run"] += len(changes)
            return changes, []
        try:
            results = self.quotas.alter_client_quotas(changes)
        except AdminError as exc:
            results = {a.entity: exc.reason for a in changes}
        failed = []
        for change in changes:
            error = results.get(change.entity, "NO_ANSWER")
            if error is None:
                bases.wrote(change)
            else:
                failed.append(f"{enforce.entity_key(change.entity)}: {error}")
        with self.lock:
            self.status.alterations["applied"] += len(changes) - len(failed)
            self.status.alterations["failed"] += len(failed)
        return changes, failed

    def _log(self, number: int, rd: Round, row: dict[str, Any], changes: list[QuotaAlteration],
             failed: list[str], dropped: Mapping[str, int], notified: int | str | None = None) -> None:
        volume = None
        if row["throttling_broker_id"] is not None:
            volume = {"broker_id": row["throttling_broker_id"], "log_dir": row["throttling_log_dir"]}
        line = {"round": number, "ts_ms": rd.ts, "cluster": rd.cluster,
                "throttle_factor": row["throttle_factor"],
                "throttling_volume": volume, "fallback_reason": row["fallback_reason"],
                "collection_error": row["collection_error"], "dry_run": self.options.dry_run,
                "alterations": [{"entity": enforce.entity_key(a.entity), "key": a.key, "value": a.value}
                                for a in changes],
                "failed": failed}
        if dropped:
            line["dropped_replicas"] = dict(dropped)
        if isinstance(notified, int):
            line["notices_sent"] = notified
        elif notified is not None:
            line["notice_error"] = notified
        print(json.dumps(line), file=self.log if self.log is not None else sys.stderr, flush=True)
