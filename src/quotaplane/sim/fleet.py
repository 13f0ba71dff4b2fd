"""Building a realistic cluster model from the parameters.

- Topics: heavy-tailed rates (log-normal), partitions that grow with the rate, replication factor
  mostly 3, retention classes from 6 hours to 7 days (and a few never deleted by time), a few
  topics created during the run.
- Placement: replicas on brokers by weighted sampling without replacement (broker weights are
  uneven, and some topics are pinned to a few brokers), each replica on one of its broker's log
  dirs (uneven too); the first replica leads. Partitions carry uneven shares of a topic's bytes.
  The replicas are kept one by one (`Replicas`) besides the (topic, volume) placement matrix.
- Volumes: each log dir is its own disk; its size comes from a catalogue (250 GiB .. 16 TiB) large
  enough for the data it holds at a random target fill, sometimes a size larger (mixed hardware),
  minus file-system overhead. Brokers that join later start empty.
- Clients: producers and consumers per topic with Zipf-like shares, a few admin clients; users
  are the teams owning the topics. Some clients burst often.
- Lifecycle: rolling restarts, a broker decommissioned, a broker added; collection errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from quotaplane.sim.model import (
    DAY_MS,
    HOUR_MS,
    MINUTE_MS,
    ROLE_ADMIN,
    ROLE_CONSUMER,
    ROLE_PRODUCER,
    Absence,
    Brokers,
    Clients,
    ClusterModel,
    Collection,
    PulsarTopic,
    Replicas,
    Subscription,
    Topics,
    Volumes,
)
from quotaplane.sim.params import SimParams
from quotaplane.sim.rng import structure_rng

GIB = 1 << 30
TIB = 1 << 40
DISK_CATALOGUE = np.array([250 * GIB, 500 * GIB, 1 * TIB, 2 * TIB, 4 * TIB, 8 * TIB, 16 * TIB],
                          dtype=np.int64)
RETENTION_CLASSES_MS = np.array([6 * HOUR_MS, DAY_MS, 3 * DAY_MS, 7 * DAY_MS, 0], dtype=np.int64)
RETENTION_WEIGHTS = np.array([0.10, 0.35, 0.25, 0.25, 0.05])
PARTITION_CHOICES = np.array([1, 3, 6, 12, 24, 48])
DOMAINS = ("orders", "payments", "inventory", "clickstream", "search", "billing", "audit", "metrics",
           "logs", "users", "shipping", "fraud", "ads", "recommendations", "notifications", "sessions",
           "catalog", "pricing")
TOPIC_KINDS = ("events", "changes", "commands", "snapshots", "enriched", "raw", "aggregates", "dlq")
PULSAR_TENANTS = ("acme", "globex", "initech", "umbrella")
PULSAR_NAMESPACES = ("orders", "telemetry", "logs", "billing", "iot")
PULSAR_NAMES = ("events", "payments", "device-readings", "app-logs", "audit", "invoices", "alerts",
                "metrics", "refunds", "sessions")


@dataclass(frozen=True)
class FleetKnobs:
    """How eventful the fleet is."""

    cluster: str = "fleet-a"
    rolling_restart_per_day: float = 0.5  # chance per day of a rolling restart of every broker
    inconsistent_probability: float = 0.3  # chance a broker's leave is seen half-way by a round
    leaves: int = 1  # brokers decommissioned during the run (when the fleet has at least 4)
    joins: int = 1  # brokers added during the run (when the fleet has at least 6)
    restarts_per_broker_per_day: float = 0.0  # extra single-broker restarts
    collection: Collection = field(default_factory=Collection)
    new_topic_fraction: float = 0.05  # topics created during the run


def topic_names(count: int, rng: np.random.Generator) -> list[str]:
    combos = [f"{d}.{k}" for d in DOMAINS for k in TOPIC_KINDS]
    order = rng.permutation(len(combos))
    return [combos[order[i % len(combos)]] + (f".{i // len(combos)}" if i >= len(combos) else "")
            for i in range(count)]


def place_replicas(partitions: np.ndarray, rf: np.ndarray, broker_weight: np.ndarray,
                   pinned: list[np.ndarray], dir_weight: np.ndarray, part_weight: np.ndarray,
                   rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, Replicas]:
    """(topics, volumes) placement, (topics, brokers) leader share, and the replicas behind them.

    Each partition's replicas are drawn without replacement with probability proportional to the
    broker weights (Gumbel top-k); `pinned[t]` (non-empty) restricts topic t to those brokers. The
    first replica leads.
    """
    n_topics, n_brokers = len(partitions), len(broker_weight)
    n_dirs = dir_weight.shape[1]
    topic_of = np.repeat(np.arange(n_topics), partitions)
    partition_of = np.arange(len(topic_of)) - np.repeat(np.cumsum(partitions) - partitions, partitions)
    logw = np.log(np.maximum(broker_weight, 1e-300))[None, :].repeat(len(topic_of), axis=0)
    for t, allowed in enumerate(pinned):
        if len(allowed):
            mask = np.full(n_brokers, -np.inf)
            mask[allowed] = 0.0
            logw[topic_of == t] += mask
    keys = logw - np.log(-np.log(rng.random(logw.shape)))
    ranked = np.argsort(-keys, axis=1, kind="stable")
    cum_dirs = np.cumsum(dir_weight, axis=1) / dir_weight.sum(axis=1, keepdims=True)
    slots: list[tuple[np.ndarray, np.ndarray, int]] = []
    for slot in range(int(rf.max(initial=0))):
        has = np.flatnonzero(rf[topic_of] > slot)
        brokers = ranked[has, slot]
        dirs = np.minimum((rng.random(len(has))[:, None] > cum_dirs[brokers]).sum(axis=1), n_dirs - 1)
        slots.append((has, brokers * n_dirs + dirs, slot))
    parts = np.concatenate([has for has, _, _ in slots]).astype(np.int64)
    replicas = Replicas(
        topic=topic_of[parts], partition=partition_of[parts].astype(np.int64),
        volume=np.concatenate([volume for _, volume, _ in slots]).astype(np.int64),
        weight=part_weight[parts], leader=np.concatenate([np.full(len(h), s == 0) for h, _, s in slots]))
    placement = replicas.placement(n_topics, n_brokers * n_dirs)
    leader = np.zeros((n_topics, n_brokers))
    lead = replicas.leader
    np.add.at(leader, (replicas.topic[lead], replicas.volume[lead] // n_dirs), replicas.weight[lead])
    return placement, leader, replicas


def segment_phase_mean(topics: Topics, start_ms: int, n_volumes: int) -> np.ndarray:
    """Per volume: the expected bytes of the partly deleted segments of its time-retained replicas
    (half a segment each) at the start."""
    r = topics.replicas
    timed = (topics.retention_ms[r.topic] > 0) & (topics.created_ms[r.topic] <= start_ms)
    return np.bincount(r.volume, weights=timed * topics.segment_bytes[r.topic] / 2.0, minlength=n_volumes)


def steady_used(topics: Topics, start_ms: int) -> tuple[np.ndarray, np.ndarray]:
    """Bytes each volume holds at the start: (retained by time-based retention, never deleted).

    A topic with retention holds one retention of writes at its mean rate plus, per replica, a part
    of a segment (the storage generator starts from the same amount); one without holds its
    `age_ms` of writes.
    """
    existing = topics.created_ms <= start_ms
    timed = topics.retention_ms > 0
    retained = (topics.base_rate * topics.retention_ms * (existing & timed) / 1000.0) @ topics.placement
    retained = retained + segment_phase_mean(topics, start_ms, topics.placement.shape[1])
    kept = (topics.base_rate * topics.age_ms * (existing & ~timed) / 1000.0) @ topics.placement
    return retained, kept


def build_topics(p: SimParams, n_brokers_placed: int, n_brokers: int, rng: np.random.Generator,
                 knobs: FleetKnobs) -> Topics:
    n = p.topics
    rate = np.clip(rng.lognormal(np.log(60_000), 1.4, n), 1_000, 50_000_000)
    wanted = np.maximum(1.0, rate / 1_000_000) * rng.uniform(1.0, 4.0, n)
    partitions = PARTITION_CHOICES[np.minimum(np.searchsorted(PARTITION_CHOICES, wanted),
                                              len(PARTITION_CHOICES) - 1)]
    rf = np.minimum(rng.choice([3, 3, 3, 3, 3, 2, 2, 1], n), n_brokers_placed)
    retention = rng.choice(RETENTION_CLASSES_MS, n, p=RETENTION_WEIGHTS)
    segment = np.where(rate < 100_000, 256 << 20, 1 << 30).astype(np.int64)
    created = np.full(n, p.start_ms, dtype=np.int64)
    new = rng.random(n) < knobs.new_topic_fraction
    created[new] = p.start_ms + (rng.uniform(0.1, 0.9, new.sum()) * (p.end_ms - p.start_ms)).astype(np.int64)
    broker_weight = np.concatenate([rng.lognormal(0.0, 0.5, n_brokers_placed),
                                    np.zeros(n_brokers - n_brokers_placed)])
    pinned = [rng.choice(n_brokers_placed, size=min(n_brokers_placed, int(rf[t]) + int(rng.integers(0, 2))),
                         replace=False) if rng.random() < 0.15 else np.zeros(0, dtype=np.int64)
              for t in range(n)]
    dir_weight = rng.lognormal(0.0, 0.4, (n_brokers, p.log_dirs))
    part_weight = rng.lognormal(0.0, 0.3, int(partitions.sum()))
    starts = np.concatenate([[0], np.cumsum(partitions)[:-1]])
    part_weight /= np.repeat(np.add.reduceat(part_weight, starts), partitions)
    placement, leader, replicas = place_replicas(partitions, rf, broker_weight, pinned, dir_weight,
                                                 part_weight, rng)
    return Topics(
        names=topic_names(n, rng), partitions=partitions, replication_factor=rf, base_rate=rate,
        diurnal_amplitude=rng.uniform(0.1, 0.6, n), peak_hour=np.mod(rng.normal(14.0, 3.0, n), 24.0),
        retention_ms=retention, segment_bytes=segment, created_ms=created, placement=placement,
        leader_share=leader, replicas=replicas, age_ms=np.zeros(n, dtype=np.int64),
    )


def size_volumes(retained: np.ndarray, kept: np.ndarray, rng: np.random.Generator,
                 fill: tuple[float, float] = (0.2, 0.6)) -> Volumes:
    """Disk sizes from the catalogue for the bytes each volume holds at a random target fill.

    The base usage is what is not Kafka's replicas (the generator adds those itself).
    """
    used = retained + kept
    n = len(used)
    target = rng.uniform(*fill, n)
    needed = used / target
    index = np.minimum(np.searchsorted(DISK_CATALOGUE, needed), len(DISK_CATALOGUE) - 1)
    index = np.where(used <= 0, rng.integers(1, 4, n), index)  # an empty (new) disk: a common size
    index = np.minimum(index + (rng.random(n) < 0.3), len(DISK_CATALOGUE) - 1)  # mixed hardware
    total = (DISK_CATALOGUE[index] * rng.uniform(0.975, 0.985, n)).astype(np.int64) // 4096 * 4096
    base = np.maximum((total * 0.01).astype(np.int64), (target * total - used).astype(np.int64))
    base = np.maximum(0, np.minimum(base, total - used.astype(np.int64)))
    return Volumes(broker=np.zeros(n, dtype=np.int64), log_dir=[], total_bytes=total, base_used_bytes=base)


def build_clients(p: SimParams, topics: Topics, rng: np.random.Generator) -> Clients:
    n = p.clients
    n_admin = max(1, n // 50)
    n_consumer = max(1, round((n - n_admin) * 0.35))
    n_producer = n - n_admin - n_consumer
    role = np.array([ROLE_PRODUCER] * n_producer + [ROLE_CONSUMER] * n_consumer + [ROLE_ADMIN] * n_admin)
    popularity = np.sqrt(topics.base_rate)
    popularity /= popularity.sum()
    by_rate = np.argsort(-topics.base_rate, kind="stable")

    def assign(count: int) -> np.ndarray:
        first = by_rate[:count]  # every topic gets one, the busiest first
        rest = rng.choice(len(topics), size=max(0, count - len(first)), p=popularity)
        return np.concatenate([first, rest]).astype(np.int64)

    topic = np.concatenate([assign(n_producer), assign(n_consumer), np.full(n_admin, -1)])
    share = np.zeros(n)
    client_id: list[str] = []
    rank = np.zeros(n, dtype=np.int64)
    for r in (ROLE_PRODUCER, ROLE_CONSUMER):
        members = np.flatnonzero(role == r)
        for t in np.unique(topic[members]):
            group = members[topic[members] == t]
            rank[group] = np.arange(len(group))
            zipf = 1.0 / (np.arange(1, len(group) + 1) ** 1.1)
            share[group] = zipf / zipf.sum()
    user: list[str] = []
    for c in range(n):
        if role[c] == ROLE_ADMIN:
            client_id.append(f"provisioner-{c - n_producer - n_consumer}")
            user.append("platform-admin")
            continue
        name = topics.names[topic[c]]
        kind = "producer" if role[c] == ROLE_PRODUCER else "consumer"
        client_id.append(f"{name}-{kind}-{rank[c]}")
        user.append("svc-" + name.split(".")[0])
    bursty = rng.random(n) < 0.2
    return Clients(user=user, client_id=client_id, role=role, topic=topic, share=share,
                   burst_probability=np.where(bursty, 0.03, 0.003))


def build_lifecycle(p: SimParams, n_placed: int, n_brokers: int, rng: np.random.Generator,
                    knobs: FleetKnobs) -> list[Absence]:
    span = p.end_ms - p.start_ms
    absences: list[Absence] = []
    for b in range(n_placed, n_brokers):  # brokers added during the run
        joined = p.start_ms + int(rng.uniform(0.2, 0.6) * span)
        absences.append(Absence(b, p.start_ms - DAY_MS, joined))
    leaving = rng.choice(n_placed, size=min(knobs.leaves, max(0, n_placed - 3)), replace=False)
    for b in leaving:
        left = p.start_ms + int(rng.uniform(0.3, 0.9) * span)
        absences.append(Absence(int(b), left, None, bool(rng.random() < knobs.inconsistent_probability)))
    days = int(np.ceil(span / DAY_MS))
    for d in range(days):
        if rng.random() < knobs.rolling_restart_per_day:
            at = p.start_ms + d * DAY_MS + int(rng.uniform(1, 22) * HOUR_MS)
            for b in range(n_brokers):
                down = int(rng.uniform(2, 5) * MINUTE_MS)
                seen_half_way = bool(rng.random() < knobs.inconsistent_probability)
                absences.append(Absence(b, at, at + down, seen_half_way))
                at += down + int(rng.uniform(3, 6) * MINUTE_MS)
        for b in range(n_brokers):
            for _ in range(rng.poisson(knobs.restarts_per_broker_per_day)):
                at = p.start_ms + d * DAY_MS + int(rng.uniform(0, 24) * HOUR_MS)
                down = int(rng.uniform(1, 10) * MINUTE_MS)
                seen_half_way = bool(rng.random() < knobs.inconsistent_probability)
                absences.append(Absence(b, at, at + down, seen_half_way))
    return absences


def build_pulsar(p: SimParams, rng: np.random.Generator) -> list[PulsarTopic]:
    out: list[PulsarTopic] = []
    seen: set[str] = set()
    for i in range(p.pulsar_topics):
        tenant = PULSAR_TENANTS[int(rng.integers(len(PULSAR_TENANTS)))]
        namespace = PULSAR_NAMESPACES[int(rng.integers(len(PULSAR_NAMESPACES)))]
        name = f"persistent://{tenant}/{namespace}/{PULSAR_NAMES[int(rng.integers(len(PULSAR_NAMES)))]}"
        if name in seen:
            name = f"{name}-{i}"
        seen.add(name)
        subs = []
        for s in range(int(rng.integers(1, 4))):
            mode = str(rng.choice(["healthy", "slow", "stalls"], p=[0.75, 0.10, 0.15]))
            subs.append(Subscription(
                name=("reader", "analytics", "archiver")[s], mode=mode,
                slow_fraction=float(rng.uniform(0.85, 0.99)), stall_probability=0.05,
                catchup=float(rng.uniform(1.5, 3.0)),
                initial_backlog_bytes=int(rng.uniform(1, 50) * (1 << 20)) if mode == "slow" else 0))
        out.append(PulsarTopic(
            name=name, partitions=int(rng.choice([0, 0, 0, 3, 6])),
            rate=float(np.clip(rng.lognormal(np.log(200_000), 1.0), 1_000, 20_000_000)),
            entry_bytes=int(rng.choice([4096, 16384, 65536])), subscriptions=subs,
            diurnal_amplitude=float(rng.uniform(0.1, 0.5)), peak_hour=float(rng.uniform(10, 18))))
    return out


def build_fleet(p: SimParams, knobs: FleetKnobs) -> ClusterModel:
    """A cluster model with every realism feature, deterministic in `p.seed`."""
    rng = structure_rng(p.seed, "fleet")
    n_brokers = p.brokers
    joins = knobs.joins if n_brokers >= 6 else 0
    n_placed = n_brokers - joins
    topics = build_topics(p, n_placed, n_brokers, rng, knobs)
    topics.age_ms = (rng.uniform(5, 30, len(topics)) * DAY_MS).astype(np.int64)
    volumes = size_volumes(*steady_used(topics, p.start_ms), rng)
    volumes.broker = np.repeat(np.arange(n_brokers), p.log_dirs)
    volumes.log_dir = [f"/var/lib/kafka/data-{d}" for _ in range(n_brokers) for d in range(p.log_dirs)]
    clients = build_clients(p, topics, rng)
    absences = build_lifecycle(p, n_placed, n_brokers, rng, knobs)
    window = p.window_ms
    return ClusterModel(
        cluster=knobs.cluster, start_ms=p.start_ms, end_ms=p.end_ms, interval_ms=p.interval_ms,
        brokers=Brokers(ids=np.arange(n_brokers, dtype=np.int64), absences=absences),
        volumes=volumes, topics=topics, clients=clients, collection=knobs.collection,
        pulsar=build_pulsar(p, rng), window_start_ms=window[0], window_end_ms=window[1],
        requests_per_minute=p.requests_per_client_per_minute, max_request_bytes=p.max_request_bytes,
        backlog_check_ms=p.backlog_check_seconds * 1000,
        partition_interval_ms=p.partition_interval_seconds * 1000,
    )
