"""The scenario registry: each scenario turns parameters into a cluster model.

`quotaplane simulate --list` prints every scenario with the first line of its docstring.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from quotaplane.sim.fleet import GIB, TIB, FleetKnobs, build_fleet, size_volumes, steady_used
from quotaplane.sim.model import (
    DAY_MS,
    HOUR_MS,
    MINUTE_MS,
    ROLE_ADMIN,
    ROLE_PRODUCER,
    Absence,
    Burst,
    ClusterModel,
    Collection,
    ErrorWindow,
    MutationBurst,
    ProducerTraffic,
    PublishBurst,
    PulsarConnection,
    PulsarProducer,
    PulsarTopic,
    Ramp,
    Replicas,
    Subscription,
)
from quotaplane.sim.params import SimParams
from quotaplane.sim.rates import RateModel
from quotaplane.sim.rng import Fields, structure_rng


@dataclass(frozen=True)
class Scenario:
    name: str
    build: Callable[[SimParams], ClusterModel]
    defaults: SimParams
    min_brokers: int = 1
    kinds: tuple[str, ...] | None = None  # the kinds written when none are asked for (None: all)

    @property
    def summary(self) -> str:
        return (self.build.__doc__ or "").strip().splitlines()[0]


SCENARIOS: dict[str, Scenario] = {}


def scenario(name: str, defaults: SimParams, min_brokers: int = 1, kinds: tuple[str, ...] | None = None
             ) -> Callable[[Callable[[SimParams], ClusterModel]], Callable[[SimParams], ClusterModel]]:
    """Register a scenario builder under `name` with its default parameters (and default kinds)."""

    def register(build: Callable[[SimParams], ClusterModel]) -> Callable[[SimParams], ClusterModel]:
        SCENARIOS[name] = Scenario(name, build, defaults, min_brokers, kinds)
        return build

    return register


@scenario("fleet", SimParams(seed=1, brokers=12, log_dirs=2, days=1.0, interval_seconds=30, clients=200,
                             topics=60, pulsar_topics=8, requests_per_client_per_minute=1))
def fleet(p: SimParams) -> ClusterModel:
    """A healthy fleet for scale runs: uneven placement, JBOD, daily cycles, bursts, retention, churn.

    Every realism feature at its everyday rate: a rolling restart about every other day, one broker
    decommissioned and one added (large enough fleets), rare collection errors and rare rounds that
    miss a broker's log dirs, topics created during the run. Disks sit at 20-60 % and stay there.
    """
    return build_fleet(p, FleetKnobs(cluster="fleet-a"))


@scenario("collection-errors", SimParams(seed=3, brokers=8, log_dirs=2, days=1.0, interval_seconds=30,
                                         clients=60, topics=30, pulsar_topics=4))
def collection_errors(p: SimParams) -> ClusterModel:
    """Frequent collection failures and membership churn: the fallback factor's test bed.

    About 3 % of rounds fail on their own and runs of 2-10 failed rounds start in ~15 % of hours,
    with all three failure reasons; brokers restart several times a day, two leave and two join;
    most leaves are seen half-way (listed active, log dirs missing), and rounds often miss a broker.
    """
    knobs = FleetKnobs(
        cluster="flaky-a", rolling_restart_per_day=1.0, inconsistent_probability=0.8, leaves=2, joins=2,
        restarts_per_broker_per_day=2.0,
        collection=Collection(error_probability=0.03, burst_probability=0.15, burst_rounds=(2, 10),
                              reason_weights=(0.35, 0.4, 0.25), missing_broker_probability=0.003),
    )
    return build_fleet(p, knobs)


# The replication-fill design: the example's per-volume limits (config/storage-cluster.properties).
FILL_SOFT_AVAILABLE_RATIO = 0.15
FILL_HARD_AVAILABLE_BYTES = 20_000_000_000
LEADER_BROKER, FILL_BROKER = 1, 2
BACKFILL_TOPIC = "clickstream-replay"
BACKFILL_CLIENT, BACKFILL_USER = "clickstream-replay-loader", "svc-replay"


@scenario("replication-fill", SimParams(
    seed=7, brokers=6, log_dirs=2, days=2.0, interval_seconds=300, clients=12, topics=8, pulsar_topics=0,
    requests_per_client_per_minute=2, max_request_bytes=32 << 20, window_hours=0.75, backlog_check_seconds=60,
), min_brokers=3, kinds=("volumes", "membership", "collection_errors", "client_requests", "topic_requests",
                         "backlog_snapshots", "producer_traffic"))
def replication_fill(p: SimParams) -> ClusterModel:
    """Replication from broker 1 fills a disk of broker 2 while every other volume stays healthy.

    The spec's motivating failure. A backfill topic (`clickstream-replay`, 6 partitions, RF 2) is
    created after 8 % of the span: all its leaders on broker 1, spread over broker 1's large log dirs,
    and all its followers on broker 2's last log dir (a 1 TiB disk). It writes flat out with 7-day
    retention, so that disk runs from ~40 % used to full at 92 % of the span; broker 1's disks take
    the same bytes split in two and stay healthy, and broker 2's other disk keeps the broker's
    aggregate used bytes low, so a per-broker aggregate check never notices. The rate is set so the
    volume passes 15 % available (the example's soft limit), then 20 GB (its hard limit), before it is
    full. Brokers 4 and 5 restart once, a few rounds fail. The request and backlog window (default:
    45 minutes in the middle of the soft-to-hard ramp) has a producer burst, a provisioning job's
    mutation burst, a slow Pulsar subscription (size quota) and a stalled one (age quota), and Pulsar
    producers on shared connections whose bursts breach each PIP-385 limit of the example's
    `notices.properties`. `partition_sizes` is written only when asked for (`--kinds`), which keeps the
    bundled example small.
    """
    base = replace(p, pulsar_topics=0, window_start_hours=p.window_start_hours or 0.0)
    outage = p.start_ms + int(0.45 * (p.end_ms - p.start_ms))  # a 20-minute describeLogDirs outage
    knobs = FleetKnobs(
        cluster="my-cluster", rolling_restart_per_day=0.0, leaves=0, joins=0, new_topic_fraction=0.0,
        collection=Collection(
            error_probability=0.004, burst_probability=0.0, missing_broker_probability=0.0,
            errors=[ErrorWindow(outage, outage + 20 * MINUTE_MS, "DESCRIBE_LOG_DIR_ERROR")]),
    )
    model = build_fleet(base, knobs)
    span = p.end_ms - p.start_ms
    v = model.volumes
    dirs = p.log_dirs
    fill_volume = FILL_BROKER * dirs + dirs - 1
    leader_volumes = [LEADER_BROKER * dirs + d for d in range(dirs)]
    retained, kept = steady_used(model.topics, p.start_ms)
    retained = retained + kept

    def resize(volume: int, nominal: int, fill: float) -> None:
        v.total_bytes[volume] = int(nominal * 0.98) // 4096 * 4096
        v.base_used_bytes[volume] = max(0, int(fill * v.total_bytes[volume] - retained[volume]))

    resize(fill_volume, 1 * TIB, 0.40)
    for d in range(dirs - 1):
        resize(FILL_BROKER * dirs + d, 2 * TIB, 0.30)
    for volume in leader_volumes:
        resize(volume, 2 * TIB, 0.30)
    created = p.start_ms + int(0.08 * span)
    full = p.start_ms + int(0.92 * span)
    free = int(v.total_bytes[fill_volume] - v.base_used_bytes[fill_volume] - retained[fill_volume])
    rate = free / ((full - created) / 1000.0)
    _add_backfill(model, rate, created, fill_volume, leader_volumes)
    # Two single-broker restarts; the first is seen half-way by a round.
    n_b = len(model.brokers.ids)
    model.brokers.absences += [
        Absence(n_b - 1, p.start_ms + int(0.25 * span), p.start_ms + int(0.25 * span) + 12 * MINUTE_MS, True),
        Absence(n_b - 2, p.start_ms + int(0.40 * span), p.start_ms + int(0.40 * span) + 6 * MINUTE_MS, False),
    ]
    if p.window_start_hours is None:
        ratio_at_created = free / v.total_bytes[fill_volume]
        soft_at = full - (full - created) * FILL_SOFT_AVAILABLE_RATIO / ratio_at_created
        hard_at = full - (full - created) * FILL_HARD_AVAILABLE_BYTES / free
        length = round((p.window_hours or 0.75) * HOUR_MS)
        begin = (int(0.5 * (soft_at + hard_at)) - length // 2) // MINUTE_MS * MINUTE_MS
        model.window_start_ms, model.window_end_ms = begin, min(p.end_ms, begin + length)
    _add_window_events(model)
    model.pulsar = _example_pulsar(model.window_start_ms)
    model.producers = _example_producers(model.window_start_ms)
    return model


def _add_backfill(model: ClusterModel, rate: float, created: int, fill_volume: int,
                  leader_volumes: list[int]) -> None:
    """The backfill topic and its producer: leaders on broker 1, followers on broker 2's fill volume."""
    volumes = [[leader_volumes[p % len(leader_volumes)], fill_volume] for p in range(6)]
    _add_topic(model, BACKFILL_TOPIC, volumes, {"base_rate": rate, "diurnal_amplitude": 0.0, "peak_hour": 0.0,
                                                "retention_ms": 7 * DAY_MS, "segment_bytes": 1 << 30,
                                                "created_ms": created},
               BACKFILL_USER, BACKFILL_CLIENT)


def _add_topic(model: ClusterModel, name: str, volumes: list[list[int]], values: dict[str, float],
               user: str, client_id: str) -> int:
    """Append a topic whose partition p has its replicas on `volumes[p]` (the first leads), the
    partitions carrying equal shares, and its only producer; return the topic's index."""
    t, c, v = model.topics, model.clients, model.volumes
    topic, parts = len(t), len(volumes)
    counts = [len(vols) for vols in volumes]
    replicas = Replicas(
        topic=np.full(sum(counts), topic, dtype=np.int64),
        partition=np.repeat(np.arange(parts, dtype=np.int64), counts),
        volume=np.array([vol for vols in volumes for vol in vols], dtype=np.int64),
        weight=np.full(sum(counts), 1.0 / parts),
        leader=np.array([i == 0 for vols in volumes for i in range(len(vols))]))
    t.replicas.extend(replicas)
    # Shares as counts / partitions, so that whole shares are exact.
    placement = np.bincount(replicas.volume, minlength=len(v.log_dir)) / parts
    leader = np.bincount(v.broker[replicas.volume[replicas.leader]], minlength=len(model.brokers.ids)) / parts
    t.names.append(name)
    fields = {"partitions": parts, "replication_factor": max(counts), "age_ms": 0, **values}
    for field_name, value in fields.items():
        setattr(t, field_name, np.append(getattr(t, field_name), value))
    t.placement = np.vstack([t.placement, placement])
    t.leader_share = np.vstack([t.leader_share, leader])
    c.user.append(user)
    c.client_id.append(client_id)
    for field_name, value in (("role", ROLE_PRODUCER), ("topic", topic), ("share", 1.0),
                              ("burst_probability", 0.0)):
        setattr(c, field_name, np.append(getattr(c, field_name), value))
    return topic


def _add_window_events(model: ClusterModel) -> None:
    """A producer burst and a provisioning job's mutation burst inside the window."""
    c, w = model.clients, model.window_start_ms
    producers = [i for i in range(len(c)) if c.role[i] == ROLE_PRODUCER and c.client_id[i] != BACKFILL_CLIENT]
    busiest = max(producers, key=lambda i: model.topics.base_rate[c.topic[i]] * c.share[i])
    c.bursts.append(Burst(busiest, w + 15 * MINUTE_MS, w + 27 * MINUTE_MS, 6.0))
    admin = int(np.flatnonzero(c.role == ROLE_ADMIN)[0])
    c.mutation_bursts.append(MutationBurst(admin, w + 30 * MINUTE_MS, w + 36 * MINUTE_MS, 12, 25))


def _example_pulsar(w: int) -> list[PulsarTopic]:
    """Pulsar topics around the window start `w`: a slow subscription and a stalled one."""
    return [
        PulsarTopic("persistent://acme/orders/payments", 3, 600_000, 16_384, [
            Subscription("billing"),
            Subscription("analytics", mode="slow", slow_fraction=0.55, initial_backlog_bytes=20 << 20),
        ], diurnal_amplitude=0.3, peak_hour=14.0),
        PulsarTopic("persistent://acme/orders/refunds", 0, 40_000, 4_096, [Subscription("billing")]),
        # Small entries: ledgers roll every 10 minutes, so the estimate of the age is close.
        PulsarTopic("persistent://acme/telemetry/device-events", 0, 400_000, 4_096, [
            Subscription("ingest", mode="stalls", stall_windows=[(w - 10 * MINUTE_MS, w + 24 * HOUR_MS)],
                         initial_backlog_bytes=400_000 * 600),  # stalled 10 minutes before the window
            Subscription("archive"),
        ], diurnal_amplitude=0.2, peak_hour=9.0),
        PulsarTopic("persistent://beta/logs/app-logs", 0, 120_000, 16_384, [
            Subscription("indexer", mode="stalls", stall_probability=0.3, catchup=3.0),
        ]),
        PulsarTopic("persistent://beta/logs/audit", 0, 8_000, 4_096, [Subscription("siem")]),
    ]


# The example's Pulsar producers (examples/README.md, config/notices.properties): four connections on
# two Pulsar brokers publishing to the backlog snapshots' topics, most of them from two connections.
# Each connection's producers are (topic, requests/s, messages per request, bytes per message).
PAYMENTS = "persistent://acme/orders/payments"
REFUNDS = "persistent://acme/orders/refunds"
DEVICE_EVENTS = "persistent://acme/telemetry/device-events"
APP_LOGS, AUDIT_LOGS = "persistent://beta/logs/app-logs", "persistent://beta/logs/audit"
FILL_PULSAR_BROKERS = ("pulsar-broker-0", "pulsar-broker-1")
FILL_CONNECTIONS: tuple[tuple[str, int, bool, float, float, float,
                              tuple[tuple[str, float, float, float], ...]], ...] = (
    # (connection id, broker, supports_throttle, receipt ms, late receipts, lost receipts, producers)
    ("payments-api/10.20.1.17:41822", 0, True, 6.0, 0.2, 0.1, (
        (f"{PAYMENTS}-partition-0", 0.012, 20, 1_500), (f"{PAYMENTS}-partition-1", 0.012, 20, 1_500),
        (f"{PAYMENTS}-partition-2", 0.012, 20, 1_500), (REFUNDS, 0.008, 5, 1_200))),
    ("settlement-batch/10.20.3.41:52210", 0, False, 8.0, 0.0, 0.0, (
        (f"{PAYMENTS}-partition-1", 0.008, 20, 1_500), (f"{PAYMENTS}-partition-2", 0.008, 20, 1_500),
        (REFUNDS, 0.008, 5, 1_200))),
    ("device-gateway/10.21.0.8:38044", 1, False, 8.0, 0.0, 0.0, (
        (DEVICE_EVENTS, 0.02, 50, 400), (APP_LOGS, 0.01, 30, 600))),
    ("log-forwarder/10.21.2.60:46710", 1, True, 4.0, 0.2, 0.1, (
        (APP_LOGS, 0.012, 30, 600), (AUDIT_LOGS, 0.008, 10, 500), (DEVICE_EVENTS, 0.012, 50, 400))),
)
# Bursts, seconds after the window start: (producers by (connection, topic), start, end, rate, size,
# publish latency ms).
FILL_BURSTS: tuple[tuple[tuple[tuple[int, str], ...], int, int, float, float, float | None], ...] = (
    # a payment-retry storm: the `orders` resource group's shared rate
    (((0, f"{PAYMENTS}-partition-0"), (0, f"{PAYMENTS}-partition-1"), (0, f"{PAYMENTS}-partition-2"),
      (1, f"{PAYMENTS}-partition-1"), (1, f"{PAYMENTS}-partition-2")), 300, 320, 40.0, 4.0, None),
    # devices reconnecting after an outage: `device-events`' topic policy
    (((2, DEVICE_EVENTS), (3, DEVICE_EVENTS)), 1_020, 1_040, 40.0, 5.0, None),
    # ... and their logs on the same connection, a topic no limit concerns
    (((2, APP_LOGS),), 1_020, 1_040, 40.0, 1.0, None),
    # a log replay: the broker's publish rate
    (((3, APP_LOGS),), 1_560, 1_570, 300.0, 20.0, None),
    # the settlement run against a slow bookie: pending publish requests on its connection
    (((1, f"{PAYMENTS}-partition-1"), (1, f"{PAYMENTS}-partition-2"), (1, REFUNDS)), 1_980, 1_990, 120.0, 1.0,
     8_000.0),
    # crash dumps persisting slowly: the publish buffer of the broker's IO thread
    (((2, APP_LOGS),), 2_340, 2_350, 200.0, 20.0, 4_000.0),
    # ... while devices and the audit trail publish on the connections sharing that IO thread
    (((2, DEVICE_EVENTS), (3, AUDIT_LOGS)), 2_340, 2_355, 40.0, 1.0, None),
)


def _example_producers(w: int) -> ProducerTraffic:
    """The example's Pulsar producers and their bursts, around the window start `w`."""
    connections: list[PulsarConnection] = []
    producers: list[PulsarProducer] = []
    index: dict[tuple[int, str], int] = {}
    for ci, (cid, broker, supports, receipt, late, lost, topics) in enumerate(FILL_CONNECTIONS):
        connections.append(PulsarConnection(cid, FILL_PULSAR_BROKERS[broker], supports, receipt_ms=receipt,
                                            late_probability=late, lost_probability=lost))
        for pid, (topic, per_s, messages, size) in enumerate(topics):
            index[(ci, topic)] = len(producers)
            producers.append(PulsarProducer(ci, pid, topic, per_s, size, messages, publish_latency_ms=4.0))
    bursts = [PublishBurst(tuple(index[k] for k in keys), w + start * 1000, w + end * 1000, rate, size,
                           latency) for keys, start, end, rate, size, latency in FILL_BURSTS]
    return ProducerTraffic(connections, producers, bursts)


# The forecast scenarios: small quiet clusters whose volumes the forecast predicts, with ground truth.
FORECAST_DEFAULTS = SimParams(seed=11, brokers=6, log_dirs=2, days=3.0, interval_seconds=60, clients=24,
                              topics=16, pulsar_topics=2, requests_per_client_per_minute=1, window_hours=6.0,
                              partition_interval_seconds=300)
STEADY_RETENTION_MS = np.array([6 * HOUR_MS, 12 * HOUR_MS, DAY_MS], dtype=np.int64)
RAMP_TOPIC, RAMP_CLIENT, RAMP_USER = "telemetry.firehose", "telemetry.firehose-producer-0", "svc-telemetry"
RAMP_BROKERS = 3  # the ramping topic lives on brokers 0..2
RAMP_START, RAMP_FULL = 0.25, 0.9  # fractions of the span: its ramp starts, its fullest volume fills


def _quiet_fleet(p: SimParams, cluster: str) -> ClusterModel:
    """A fleet without churn: no broker leaves or joins, no rolling restart, no new topics."""
    return build_fleet(p, FleetKnobs(cluster=cluster, rolling_restart_per_day=0.0, leaves=0, joins=0,
                                     new_topic_fraction=0.0))


def _mean_volume_rates(model: ClusterModel, seed: int) -> np.ndarray:
    """Bytes/s each volume receives at the topics' mean rates (bursts included, daily cycle averaged)."""
    t = model.topics
    return (t.base_rate * RateModel(model, Fields(seed)).expected_burst) @ t.placement


def _resize_steady(model: ClusterModel, p: SimParams, fill: tuple[float, float]) -> None:
    """Disks sized again for what the (changed) topics hold at the start, at a target fill."""
    v = model.volumes
    sized = size_volumes(*steady_used(model.topics, p.start_ms), structure_rng(p.seed, "resize"), fill)
    v.total_bytes, v.base_used_bytes = sized.total_bytes, sized.base_used_bytes


@scenario("linear-fill", FORECAST_DEFAULTS)
def linear_fill(p: SimParams) -> ClusterModel:
    """Volumes filling linearly (no time retention, steady writes): forecast ground truth.

    Every topic keeps everything (retention 0) and writes at a nearly flat rate (daily cycle at most
    5 %), so each volume's usage grows linearly. Each volume with replicas starts at 55-75 %
    available and is sized to fill up in 0.5-2 spans at its mean rate: most cross 50 % and 35 %
    available during the run, about a third run out of space. No broker churn.
    """
    model = _quiet_fleet(p, "fill-a")
    rng = structure_rng(p.seed, "linear-fill")
    t, v = model.topics, model.volumes
    t.retention_ms[:] = 0
    t.diurnal_amplitude = rng.uniform(0.0, 0.05, len(t))
    t.age_ms = (rng.uniform(0.1, 0.4, len(t)) * DAY_MS).astype(np.int64)
    rate = _mean_volume_rates(model, p.seed)
    _, kept = steady_used(t, p.start_ms)
    span_s = (p.end_ms - p.start_ms) / 1000.0
    available = rng.uniform(0.55, 0.75, len(rate))
    to_full = rng.uniform(0.5, 2.0, len(rate)) * span_s
    placed = rate > 0
    total = (rate * to_full / available).astype(np.int64) // 4096 * 4096
    v.total_bytes = np.where(placed, np.maximum(total, 4096), v.total_bytes)
    base = (v.total_bytes * (1.0 - available) - kept).astype(np.int64)
    v.base_used_bytes = np.where(placed, np.maximum(0, base), v.base_used_bytes)
    return model


def _steady_retention(p: SimParams, cluster: str, name: str) -> ClusterModel:
    """Every topic with time retention (6 h, 12 h or 1 day) and 1 GiB segments, disks 20-40 % used."""
    model = _quiet_fleet(p, cluster)
    rng = structure_rng(p.seed, name)
    t = model.topics
    t.retention_ms = rng.choice(STEADY_RETENTION_MS, len(t))
    t.segment_bytes = np.full(len(t), GIB, dtype=np.int64)
    t.diurnal_amplitude = rng.uniform(0.05, 0.3, len(t))
    t.base_rate = t.base_rate * 4.0  # busier partitions: segments roll every few hours
    _resize_steady(model, p, (0.2, 0.4))
    return model


@scenario("retention-steady", FORECAST_DEFAULTS)
def retention_steady(p: SimParams) -> ClusterModel:
    """Time retention in steady state: sawtooth usage that never crosses a limit (false-alert test bed).

    Every topic deletes by time (6 h, 12 h or 1 day) in 1 GiB segments, so each replica's size is a
    sawtooth (it grows by its writes and drops by whole segments at retention checks) around one
    retention of writes, and each volume holds its level: disks sit at 20-40 % used and stay there.
    Replicas start at random points of their segment cycle. No broker churn.
    """
    return _steady_retention(p, "steady-a", "retention-steady")


@scenario("accelerating-topic", FORECAST_DEFAULTS, min_brokers=RAMP_BROKERS)
def accelerating_topic(p: SimParams) -> ClusterModel:
    """Like retention-steady, but one topic's rate grows exponentially until its volumes fill.

    `telemetry.firehose` (6 partitions, RF 3, all on brokers 0-2, 1-day retention, 1 GiB segments)
    writes steadily until a quarter of the span, then its rate grows exponentially (x8 by the end).
    Its base rate is set so that its fullest volume runs out of space at 90 % of the span despite
    retention; the other volumes holding it cross 50 % and 35 % available late in the run. Every
    other volume holds its level as in retention-steady.
    """
    model = _steady_retention(p, "ramp-a", "accelerating-topic")
    v, dirs = model.volumes, p.log_dirs
    free = v.total_bytes - v.base_used_bytes - np.sum(steady_used(model.topics, p.start_ms), axis=0)
    volumes = [[((q + k) % RAMP_BROKERS) * dirs + (q // RAMP_BROKERS) % dirs for k in range(RAMP_BROKERS)]
               for q in range(6)]
    start = p.start_ms + int(RAMP_START * (p.end_ms - p.start_ms))
    full = p.start_ms + int(RAMP_FULL * (p.end_ms - p.start_ms))
    topic = _add_topic(model, RAMP_TOPIC, volumes, {
        "base_rate": 0.0, "diurnal_amplitude": 0.0, "peak_hour": 0.0, "retention_ms": DAY_MS,
        "segment_bytes": GIB, "created_ms": p.start_ms}, RAMP_USER, RAMP_CLIENT)
    ramp = Ramp(topic, start, float(np.log(8.0) / ((p.end_ms - start) / DAY_MS)), exponential=True)
    share = model.topics.placement[topic]
    held = np.flatnonzero(share > 0)
    # Bytes the topic retains at `full` per byte/s of base rate: the ramp integrated over one retention.
    grid = np.linspace(full - DAY_MS, full, 2_001)
    retained_per_rate = np.trapezoid(ramp.multiplier(grid), grid) / 1000.0
    segments = np.bincount(model.topics.replicas.volume[model.topics.replicas.topic == topic],
                           minlength=len(v.log_dir)) * GIB / 2.0
    rates = (free[held] - segments[held]) / (share[held] * retained_per_rate)
    model.topics.base_rate[topic] = float(rates.min())
    model.topics.ramps.append(ramp)
    return model


# The noisy-neighbour design (docs/notices.md): Pulsar producers sharing connections and brokers, with
# the limits of its notices.properties. Rates are bytes/s; each connection's producers are
# (topic, requests/s, messages per request, bytes per message).
NOISY_BROKERS = ("pulsar-broker-0", "pulsar-broker-1")
NOISY_BROKER_BYTE_RATE = 1_000_000
NOISY_MAX_PENDING = 32
NOISY_BUFFER_MB, NOISY_IO_THREADS = 2, 2
NOISY_RECEIPT_WAIT_MS = 100
HOT_TOPIC, HOT_TOPIC_BYTE_RATE = "acme/web/clicks", 100_000
NOISY_GROUP, NOISY_GROUP_BYTE_RATE = "telemetry", 150_000
NOISY_GROUP_TOPICS = ("acme/telemetry/metrics", "acme/telemetry/traces")
NOISY_NAMESPACE, NOISY_NAMESPACE_MESSAGE_RATE = "acme/orders", 500  # a policy no topic reaches
NOISY_CONNECTIONS: tuple[tuple[str, int, bool, float, float, tuple[tuple[str, float, float, float], ...]],
                         ...] = (
    # (application, broker, supports_throttle, late receipts, lost receipts, producers)
    ("checkout-api", 0, True, 0.12, 0.04, (
        (HOT_TOPIC, 3.0, 20, 600), ("acme/orders/events", 1.0, 8, 600),
        ("acme/orders/audit", 0.25, 4, 400))),
    ("clickstream-bridge", 0, False, 0.0, 0.0, (
        (HOT_TOPIC, 2.4, 20, 500), ("acme/web/pageviews", 1.5, 20, 700),
        ("acme/web/sessions", 0.5, 10, 500))),
    ("order-service", 0, True, 0.05, 0.02, (
        ("acme/orders/payments", 1.5, 4, 1200), ("acme/orders/refunds", 0.5, 2, 900),
        ("acme/orders/events", 1.0, 8, 600), ("acme/orders/audit", 0.5, 4, 400))),
    ("metrics-agent", 1, False, 0.0, 0.0, (
        ("acme/telemetry/metrics-partition-0", 2.0, 25, 500),
        ("acme/telemetry/metrics-partition-1", 2.0, 25, 500), ("acme/logs/app", 1.0, 20, 800))),
    ("tracing-collector", 1, True, 0.10, 0.05, (
        ("acme/telemetry/traces", 2.0, 25, 900), ("acme/logs/app", 1.0, 20, 800),
        ("acme/logs/audit", 1.0, 20, 1000))),
    ("log-shipper", 1, False, 0.0, 0.0, (
        ("acme/logs/app", 1.0, 20, 800), ("acme/logs/access", 1.0, 40, 800),
        ("acme/logs/audit", 0.5, 20, 1000))),
)
# Explicit bursts, seconds after the window start: (producers by (application, topic), start, end,
# rate, size, publish latency ms).
NOISY_BURSTS: tuple[tuple[tuple[tuple[str, str], ...], int, int, float, float, float | None], ...] = (
    # flash sales: the hot topic surges over its policy three times
    ((("checkout-api", HOT_TOPIC), ("clickstream-bridge", HOT_TOPIC)), 20, 32, 2.2, 1.0, None),
    ((("checkout-api", HOT_TOPIC), ("clickstream-bridge", HOT_TOPIC)), 70, 80, 2.2, 1.0, None),
    ((("checkout-api", HOT_TOPIC), ("clickstream-bridge", HOT_TOPIC)), 150, 158, 2.2, 1.0, None),
    # trace sampling raised twice: the telemetry group goes over its shared rate
    ((("tracing-collector", "acme/telemetry/traces"),), 60, 75, 3.0, 1.0, None),
    ((("tracing-collector", "acme/telemetry/traces"),), 110, 125, 3.0, 1.0, None),
    # a log replay: the broker's publish rate
    ((("log-shipper", "acme/logs/access"),), 40, 55, 8.0, 5.0, None),
    # a slow bookie under a burst: pending publish requests on the connection
    (tuple(("order-service", t[0]) for t in NOISY_CONNECTIONS[2][5]), 90, 98, 8.0, 1.0, 2_000.0),
    # large batches persisting slowly: the publish buffer of the connection's IO thread
    ((("tracing-collector", "acme/logs/audit"),), 130, 140, 3.0, 6.0, 4_000.0),
)


@scenario("noisy-neighbour", SimParams(seed=5, brokers=2, log_dirs=1, days=0.01, interval_seconds=60,
                                       clients=3, topics=2, pulsar_topics=0, window_hours=0.05),
          kinds=("producer_traffic",))
def noisy_neighbour(p: SimParams) -> ClusterModel:
    """Pulsar producers sharing connections: every PIP-385 throttling reason, with its notices.properties.

    Six client connections on two brokers (`pulsar-broker-0`, `-1`), each with three or four
    producers (one per topic, ids 0..3), publish Poisson batches for three minutes (the window);
    half of the connections support throttle notices, and their receipts come mostly in a few ms,
    sometimes after the 100 ms wait or never. `acme/web/clicks` (two producers, ~60 KB/s) surges to
    ~130 KB/s three times against its 100 KB/s policy; the `telemetry` resource group's two topics
    (~95 KB/s) go over their shared 150 KB/s twice; `log-shipper` replays `acme/logs/access` at
    ~1.3 MB/s for 15 s (the broker's 1 MB/s); `order-service` bursts with 2 s persistence for 8 s
    (more than 32 pending requests); `tracing-collector` sends ~120 KB batches taking 4 s to persist
    for 10 s (over a 1 MiB publish buffer per IO thread). `notices.properties` is written beside the
    telemetry.
    """
    model = _quiet_fleet(replace(p, pulsar_topics=0), "noisy-a")
    model.pulsar = []
    rng = structure_rng(p.seed, "noisy-neighbour")
    connections: list[PulsarConnection] = []
    producers: list[PulsarProducer] = []
    index: dict[tuple[str, str], int] = {}
    for ci, (app, broker, supports, late, lost, topics) in enumerate(NOISY_CONNECTIONS):
        address = (f"10.{12 + broker}.{int(rng.integers(0, 256))}.{int(rng.integers(1, 255))}:"
                   f"{int(rng.integers(32_768, 61_000))}")
        connections.append(PulsarConnection(f"{app}/{address}", NOISY_BROKERS[broker], supports,
                                            receipt_ms=float(rng.uniform(3.0, 15.0)), late_probability=late,
                                            lost_probability=lost))
        for pid, (topic, per_s, messages, size) in enumerate(topics):
            index[(app, topic)] = len(producers)
            producers.append(PulsarProducer(ci, pid, f"persistent://{topic}", per_s, size, messages,
                                            publish_latency_ms=float(rng.uniform(2.0, 6.0))))
    w = model.window_start_ms
    bursts = [PublishBurst(tuple(index[k] for k in keys), w + start * 1000, w + end * 1000, rate, size,
                           latency) for keys, start, end, rate, size, latency in NOISY_BURSTS]
    model.producers = ProducerTraffic(connections, producers, bursts)
    model.configs = {"notices.properties": noisy_neighbour_properties()}
    return model


def noisy_neighbour_properties() -> str:
    """The `notices.properties` of `noisy-neighbour` (docs/notices.md, Configuration)."""
    return "\n".join([
        "# Producer throttle notices (PIP-385) for the noisy-neighbour scenario: docs/notices.md.",
        "# broker.conf",
        f"brokerPublisherThrottlingMaxByteRate={NOISY_BROKER_BYTE_RATE}",
        f"maxPendingPublishRequestsPerConnection={NOISY_MAX_PENDING}",
        f"maxMessagePublishBufferSizeInMB={NOISY_BUFFER_MB}",
        f"numIOThreads={NOISY_IO_THREADS}",
        f"throttleProducerReceiptWaitTimeMillis={NOISY_RECEIPT_WAIT_MS}",
        "# topic and namespace publish-rate policies",
        f"topic.{HOT_TOPIC}.publishMaxByteRate={HOT_TOPIC_BYTE_RATE}",
        f"namespace.{NOISY_NAMESPACE}.publishMaxMessageRate={NOISY_NAMESPACE_MESSAGE_RATE}",
        "# resource groups",
        f"resourcegroup.{NOISY_GROUP}.publishRateInBytes={NOISY_GROUP_BYTE_RATE}",
        f"resourcegroup.{NOISY_GROUP}.topics={','.join(NOISY_GROUP_TOPICS)}",
        "quotaplane.notices.pauseRule=token-bucket",
        "",
    ])


def scenario_names() -> list[str]:
    return sorted(SCENARIOS)

