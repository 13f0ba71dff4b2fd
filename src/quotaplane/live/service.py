"""The live control loop: every round observe, decide, enforce, notify, land, remember, export.

One round:

1. observe: every source gives the rows it saw (`quotaplane.live.sources`); the rows the readers'
   rules reject are left out and counted, by input and rule (`screen`), and the round goes on with
   the rest;
2. decide: the decider of every live policy, in registry order (`quotaplane.core.live`): storage
   (the throttle factor), the forecast, ...;
3. enforce: the client quotas brought to the storage factor (`quotaplane.live.enforce`: only the
   entities that differ are altered; a failed alteration is retried next round);
4. notify: with a notice channel, a round whose factor is below 1 sends `BrokerProduceQuotaExceeded`;
5. land: the observed rows the rules accept and the decision tables (`quotaplane.live.landing`),
   so every reader of the landing directory reads it whole, strict or not; before
6. remember: the state is saved atomically, so after a kill -9 the restarted service redoes at most
   the round it was in;
7. export: the status read by `/metrics` and the JSON endpoints, and one JSON log line on stderr.

The loop never ends because of what it observes or a peer does: a source's failure is a reason in
the round, a decider's is logged and counted, a sink that cannot write (a full disk, a read-only
mount, a cluster that refuses an alteration) is logged once, counted and retried at the next round
(`quotaplane.live.faults`). A stop request (SIGTERM/SIGINT) ends it after the current round.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from quotaplane.core.live import Decider, LivePart, Observed, Outcome, screen
from quotaplane.core.records import RecordSchema
from quotaplane.live.enforce import Enforced, Enforcer, entity_key
from quotaplane.live.faults import Faults, describe
from quotaplane.live.landing import Landing
from quotaplane.live.metrics import LiveStatus
from quotaplane.live.sources import Observation, Source
from quotaplane.live.state import ServiceState, StateFile
from quotaplane.notices.protocol import Reason
from quotaplane.storage.live import decision_of

if TYPE_CHECKING:
    from quotaplane.live.notice_channel import NoticeChannel


@dataclass
class Options:
    interval_s: float
    rounds: int | None = None  # stop after this many rounds (None: until stopped)
    dry_run: bool = False
    cluster: str = "live"  # the cluster of rows whose source does not name one


@dataclass
class LivePolicy:
    """A policy's decider in one service, with its policy name and how it takes part."""

    name: str
    part: LivePart
    decider: Decider


def live_policies(loaded: Mapping[str, Any], observed: Iterable[str]) -> list[LivePolicy]:
    """The decider of every registered policy that decides live on an observed input and is
    configured (`loaded`: policy name -> its loaded configuration), in registry order."""
    from quotaplane.registry import POLICIES

    inputs = set(observed)
    out = []
    for policy in POLICIES:
        if policy.live is None or not inputs & set(policy.live.inputs):
            continue
        decider = policy.live.build(loaded)
        if decider is not None:
            out.append(LivePolicy(policy.name, policy.live, decider))
    return out


def input_schemas() -> dict[str, RecordSchema]:
    """The schema of every telemetry input, by name (the readers' rules the rounds are checked by)."""
    from quotaplane.registry import all_inputs

    return {item.name: item.schema for item in all_inputs()}


class Service:
    def __init__(self, sources: Sequence[Source], policies: Sequence[LivePolicy],
                 schemas: Mapping[str, RecordSchema], status: LiveStatus, options: Options,
                 state: ServiceState | None = None, state_file: StateFile | None = None,
                 enforcer: Enforcer | None = None, landing: Landing | None = None,
                 notices: NoticeChannel | None = None, excluded_principals: Iterable[str] = (),
                 log: TextIO | None = None, sleep: Callable[[float], Any] | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.sources = list(sources)
        self.policies = list(policies)
        self.schemas = schemas
        self.status = status
        self.options = options
        self.state_file = state_file
        self.state = state if state is not None else (state_file.load() if state_file else ServiceState())
        self.enforcer = enforcer
        self.landing = landing
        self.notices = notices
        self.excluded = frozenset(excluded_principals)
        self.log = log
        self.faults = Faults(log)
        self.stop = threading.Event()
        self.sleep = sleep if sleep is not None else self.stop.wait
        self.clock = clock
        self.outcomes: dict[str, Outcome] = {}
        self.lock = threading.Lock()  # the HTTP threads read `status` while a round updates it

    def run(self, gap: Callable[[], float | None] | None = None) -> int:
        """Rounds until a source ends, `options.rounds` are done, or a stop is requested."""
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

    def warm(self, rounds: Iterable[tuple[int, int, Mapping[str, Sequence[Mapping[str, Any]]]]]) -> int:
        """Hand earlier rounds `(number, time, rows by input)` to the deciders' memory (after a
        restart); the rounds taken."""
        taken = 0
        for number, ts_ms, rows in rounds:
            observed, _ = self._screen(number, ts_ms, self.options.cluster, rows)
            for policy in self.policies:
                policy.decider.warm(observed)
            taken += 1
        return taken

    def round(self) -> bool:
        """One round; False when a source has no more rounds."""
        started = time.perf_counter()
        number = self.state.rounds + 1
        now_ms = int(self.clock() * 1000)
        observations = self._observe(number, now_ms)
        if observations is None:
            return False
        ts_ms = next((o.ts_ms for _, o in observations if o.ts_ms is not None), now_ms)
        cluster = next((o.cluster for _, o in observations if o.cluster is not None), self.options.cluster)
        raw: dict[str, list[dict[str, Any]]] = {}
        for _, observation in observations:
            for name, rows in observation.rows.items():
                raw.setdefault(name, []).extend(rows)
        observed, rejected = self._screen(number, ts_ms, cluster, raw)
        outcomes, failures = self._decide(observed)
        decision = decision_of(outcomes)
        enforced = self._enforce(decision.throttle_factor) if decision is not None else None
        notified = self.notify(decision.throttle_factor) if decision is not None else None
        self._land(number, observed.rows, outcomes)
        self.state.rounds = number
        storage = outcomes.get("storage")
        if storage is not None:
            self.state.last_decision = storage.document
        self._remember()
        self.outcomes = outcomes
        with self.lock:
            s = self.status
            s.rounds, s.number = s.rounds + 1, number
            s.rejected.update(rejected)
            for source, observation in observations:
                s.source_errors.update((source.name, e.split(":", 1)[0]) for e in observation.errors)
            s.source_errors.update(("decide", name) for name in failures)
            if enforced is not None:
                s.targets = enforced.targets
                key = "dry_run" if self.options.dry_run else "applied"
                s.alterations[key] += len(enforced.changes) - len(enforced.failed)
                s.alterations["failed"] += len(enforced.failed)
            for policy in self.policies:
                if policy.name in outcomes:
                    s.documents[policy.part.endpoint] = outcomes[policy.name].document
            s.sink_failures = Counter(self.faults.counts)
            s.landing_dropped_rounds = self.landing.dropped_rounds if self.landing is not None else 0
            s.last_round_unix = self.clock()
            s.last_round_seconds = time.perf_counter() - started
        self._log(observed, observations, outcomes, failures, enforced, rejected, notified)
        return True

    def _observe(self, number: int, now_ms: int) -> list[tuple[Source, Observation]] | None:
        out = []
        for source in self.sources:
            try:
                observation = source.observe(number, now_ms, self.outcomes)
            except Exception as exc:  # a source reports its failures; this is one it did not foresee
                observation = Observation(errors=[f"SOURCE_ERROR: {describe(exc)}"])
            if observation is None:
                return None
            out.append((source, observation))
        return out

    def _screen(self, number: int, ts_ms: int, cluster: str,
                raw: Mapping[str, Sequence[Mapping[str, Any]]]) -> tuple[Observed, Counter[tuple[str, str]]]:
        rows: dict[str, list[dict[str, Any]]] = {}
        rejected: Counter[tuple[str, str]] = Counter()
        for name, given in raw.items():
            schema = self.schemas.get(name)
            if schema is None:
                raise ValueError(f"a source observed {name!r}, which is no telemetry input")
            rows[name], left_out = screen(schema, given)
            rejected.update({(name, reason.split(": ", 1)[1]): n for reason, n in left_out.items()})
        return Observed(number, ts_ms, cluster, rows), rejected

    def _decide(self, observed: Observed) -> tuple[dict[str, Outcome], list[str]]:
        outcomes: dict[str, Outcome] = {}
        failures: list[str] = []
        for policy in self.policies:
            try:
                outcomes[policy.name] = policy.decider.decide(observed, outcomes)
            except Exception as exc:  # one policy's failure leaves the others deciding
                failures.append(policy.name)
                self.faults.failed(f"{policy.name} decisions", describe(exc))
            else:
                self.faults.ok(f"{policy.name} decisions")
        return outcomes, failures

    def _enforce(self, factor: float) -> Enforced | None:
        if self.enforcer is None:
            return None
        try:
            enforced = self.enforcer.apply(factor)
        except Exception as exc:
            self.faults.failed("enforcement", describe(exc))
            return Enforced(failed=[describe(exc)])
        if enforced.failed:
            self.faults.failed("enforcement", enforced.failed[0])
        else:
            self.faults.ok("enforcement")
        return enforced

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
        try:
            sent = len(self.notices.throttle(
                reason=Reason.BrokerProduceQuotaExceeded, pause_ms=round(self.options.interval_s * 1000),
                exclude_principals={*self.excluded, *(f"User:{name}" for name in self.excluded)}))
        except Exception as exc:  # the channel's failure never stops the control loop
            self.faults.failed("notices", describe(exc))
            return f"{type(exc).__name__}: {exc}"
        self.faults.ok("notices")
        return sent

    def _land(self, number: int, raw: Mapping[str, Sequence[Mapping[str, Any]]],
              outcomes: Mapping[str, Outcome]) -> None:
        if self.landing is None:
            return
        tables: dict[str, Sequence[Mapping[str, Any]]] = dict(raw)
        for outcome in outcomes.values():
            tables.update(outcome.tables)
        try:
            self.landing.land(number, tables)
        except OSError as exc:
            self.faults.failed("landing", describe(exc, self.landing.root))
        else:
            self.faults.ok("landing")

    def _remember(self) -> None:
        if self.state_file is None:
            return
        try:
            self.state_file.save(self.state)
        except OSError as exc:
            self.faults.failed("state", describe(exc, self.state_file.path))
        else:
            self.faults.ok("state")

    def _log(self, observed: Observed, observations: Sequence[tuple[Source, Observation]],
             outcomes: Mapping[str, Outcome], failures: Sequence[str], enforced: Enforced | None,
             rejected: Counter[tuple[str, str]], notified: int | str | None) -> None:
        line: dict[str, Any] = {"round": observed.number, "ts_ms": observed.ts_ms,
                                "cluster": observed.cluster}
        for outcome in outcomes.values():
            line.update(outcome.log)
        if enforced is not None:
            line.update({"dry_run": self.options.dry_run,
                         "alterations": [{"entity": entity_key(a.entity), "key": a.key, "value": a.value}
                                         for a in enforced.changes],
                         "failed": enforced.failed})
        errors = [f"{source.name}: {e}" for source, o in observations for e in o.errors]
        if errors:
            line["source_errors"] = errors
        if failures:
            line["decide_errors"] = list(failures)
        if rejected:
            line["rejected"] = {f"{name}: {reason}": n for (name, reason), n in sorted(rejected.items())}
        if isinstance(notified, int):
            line["notices_sent"] = notified
        elif notified is not None:
            line["notice_error"] = notified
        print(json.dumps(line), file=self.log if self.log is not None else sys.stderr, flush=True)
