"""Kafka client quotas, incrementally: one broker's requests decided as the watermark passes them
(the streaming face of `quotaplane.clients`; interface: `quotaplane.core.incremental`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from quotaplane.clients.config import ClientsRunConfig
from quotaplane.clients.engine.evaluate import (
    ClientQuotaEngine,
    ClientRequest,
    GroupKey,
    RequestOutcome,
    Sensors,
)
from quotaplane.clients.engine.storage_factor import FactorTimeline, StorageDecision, decision_order
from quotaplane.clients.records import CLIENT_REQUESTS
from quotaplane.core.incremental import Advance, Column, Incremental, Table

INPUT = CLIENT_REQUESTS.name
#: the batch stage's table (`spark.stage.DECISIONS_TABLE`, which imports pyspark)
DECISIONS_TABLE = "client_request_decisions"
#: the table `broadcast` names: the storage policy's decisions
STORAGE_DECISIONS = "storage_decisions"
LATE_REASON = "a request before the watermark already decided (its broker's sensors have moved on)"

# `client_request_decisions` as the batch stage writes it (`spark.partition.DECISION_FIELDS`
# without config_id/_file/_row, then `quota_value`): every column but `seq` is the reference
# outcome's field of that name (the mapping of tests/clients/test_differential.py).
DECISION_COLUMNS = (
    ("broker_id", "long"), ("quota_type", "string"), ("tag_user", "string"),
    ("tag_client_id", "string"), ("ts_ms", "long"), ("user", "string"), ("client_id", "string"),
    ("value", "double"), ("value_units", "long"), ("recorded", "boolean"), ("quota_limit", "double"),
    ("quota_level", "int"), ("quota_source", "string"), ("throttle_factor", "double"),
    ("rate", "double"), ("window_ms", "long"), ("tokens", "double"), ("utilisation_pct", "double"),
    ("violated", "boolean"), ("throttled", "boolean"), ("throttle_time_ms", "int"), ("seq", "long"),
    ("quota_value", "double"),
)
_DOUBLES = frozenset(name for name, kind in DECISION_COLUMNS if kind == "double")


def decision_row(outcome: RequestOutcome, seq: int | None) -> dict[str, Any]:
    """The `client_request_decisions` row of one outcome; `seq`: its place in its sharing group's
    processing order (None when not recorded). `quota_value` is null when the KIP-786 metric is off
    (then the table has no such column: `ClientsIncremental.output_tables`)."""
    row: dict[str, Any] = {}
    for name, _ in DECISION_COLUMNS:
        value = seq if name == "seq" else getattr(outcome, name)
        row[name] = float(value) if name in _DOUBLES and value is not None else value
    return row


@dataclass
class ClientsKeyState:
    """One broker's state (pickles: plain data)."""

    #: the sharing groups' sampled rates and token buckets (`Sensors` of the reference engine)
    sensors: Sensors = field(default_factory=Sensors)
    #: the next `seq` of each sharing group (its recorded requests so far)
    seq: dict[GroupKey, int] = field(default_factory=dict)
    #: requests not decided yet (event time >= `through`), as given
    pending: list[dict[str, Any]] = field(default_factory=list)
    #: the broker's id, once a request told it
    broker_id: int | None = None
    #: the storage decisions that can still be in force: per source (cluster-wide, or one observing
    #: broker) the latest before `through`, and every later one; sorted by `decision_order`, unique
    decisions: list[StorageDecision] = field(default_factory=list)
    #: every request before this time has been decided (None: none decided yet)
    through: int | None = None


class ClientsIncremental(Incremental[ClientsRunConfig]):
    """Kafka client quotas per broker (docs/clients.md, "In the streaming mode").

    Key: `broker_id` (quotas, sensors and token buckets are per broker: docs/clients.md). Unit: one
    request. A request at `ts_ms` is final at watermark W when `ts_ms < W`: the reference engine
    processes a broker's requests in event time (ties by `_file`, `_position`, as the Spark stage
    breaks them by file and row), and every request that could still come has `ts_ms >= W`, so it
    comes after. The storage throttle factor in force at `ts_ms` (produce, with the storage
    callback) is known by then: the driver lowers W to the storage policy's `decided_through` and
    gives every storage decision before it (`broadcast`; repeats are merged).

    Final requests are fed, in that order, to the reference engine's `ClientQuotaEngine.process`
    over the key's `Sensors`, with a `FactorTimeline` of the decisions kept. State
    (`ClientsKeyState`): the sensors (one sampled rate or bucket per sharing group: bounded by the
    broker's clients, not by time), the `seq` counters (same), the undecided requests (those at or
    after W), and the storage decisions that can still be in force at W or later (per source the
    latest before W, and the later ones).
    """

    name = "clients"
    time_fields: ClassVar[Mapping[str, str]] = {INPUT: "ts_ms"}
    key = ("broker_id",)
    outcomes: ClassVar[Mapping[str, str]] = {DECISIONS_TABLE: "throttled"}
    tables = (Table(DECISIONS_TABLE, tuple(Column(n, k) for n, k in DECISION_COLUMNS)),)
    broadcast = STORAGE_DECISIONS

    def output_tables(self, config: ClientsRunConfig) -> tuple[Table, ...]:
        """Without the KIP-786 metric the batch table has no `quota_value` column: nor has this one."""
        if config.settings(config.storage_given).quota_value_metric:
            return self.tables
        table = self.tables[0]
        return (Table(table.name, tuple(c for c in table.columns if c.name != "quota_value")),)

    def new_state(self, config: ClientsRunConfig) -> ClientsKeyState:
        return ClientsKeyState()

    def advance(self, config: ClientsRunConfig, state: ClientsKeyState,
                rows: Mapping[str, Sequence[dict[str, Any]]], watermark_ms: int | None) -> Advance:
        late = []
        for row in rows.get(INPUT, ()):
            if state.through is not None and row["ts_ms"] < state.through:
                late.append({"input": INPUT, "reason": LATE_REASON, "row": row})
            else:
                state.pending.append(row)
                if state.broker_id is None:
                    state.broker_id = int(row["broker_id"])
        _merge_decisions(state, rows.get(STORAGE_DECISIONS, ()))

        if watermark_ms is None:
            final, state.pending = state.pending, []
        else:
            final = [r for r in state.pending if r["ts_ms"] < watermark_ms]
            state.pending = [r for r in state.pending if r["ts_ms"] >= watermark_ms]
        final.sort(key=lambda r: (r["ts_ms"], r["_file"], r["_position"]))

        settings = config.settings(config.storage_given)
        engine = ClientQuotaEngine(config.quotas, settings, FactorTimeline(state.decisions), state.sensors)
        out = []
        for r in final:
            outcome = engine.process(ClientRequest(r["ts_ms"], r["broker_id"], r["user"], r["client_id"],
                                                   r["quota_type"], r["value"]))
            seq = None
            if outcome.recorded:
                group = (outcome.broker_id, outcome.quota_type, outcome.tag_user, outcome.tag_client_id)
                seq = state.seq.get(group, 0)
                state.seq[group] = seq + 1
            out.append(decision_row(outcome, seq))

        if watermark_ms is not None:
            state.through = watermark_ms if state.through is None else max(state.through, watermark_ms)
            _prune_decisions(state)
        return Advance({DECISIONS_TABLE: out}, late)


def _merge_decisions(state: ClientsKeyState, rows: Iterable[dict[str, Any]]) -> None:
    """Add the storage decisions given (repeats of ones kept, or older than them, change nothing)."""
    known = set(state.decisions)
    for row in rows:
        factor = row.get("throttle_factor")
        if factor is None or factor != factor:  # the batch stage drops decisions without a factor
            continue
        observing = row.get("observing_broker_id")
        observing = None if observing is None or observing != observing else int(observing)
        if state.broker_id is not None and observing not in (None, state.broker_id):
            continue
        decision = StorageDecision(int(row["ts_ms"]), float(factor), observing)
        if decision not in known:
            known.add(decision)
            state.decisions.append(decision)
    state.decisions.sort(key=decision_order)
    _prune_decisions(state)


def _prune_decisions(state: ClientsKeyState) -> None:
    """Keep what can still be in force for a request at `through` or later (`FactorTimeline`: the
    last applicable decision at or before it in `decision_order`): per source, the last decision
    before `through`, and all later ones; a decision of another observing broker never applies."""
    broker = state.broker_id
    applicable = [d for d in state.decisions
                  if broker is None or d.observing_broker_id in (None, broker)]
    through = state.through
    if through is None:
        state.decisions = applicable
        return
    last_before: dict[int | None, StorageDecision] = {}
    for d in applicable:  # sorted: the last one of a source wins
        if d.ts_ms < through:
            last_before[d.observing_broker_id] = d
    kept = set(last_before.values())
    state.decisions = [d for d in applicable if d.ts_ms >= through or d in kept]
