"""The simulated world: a Kafka cluster (brokers, JBOD volumes, topics, clients), how it is polled
(collection rounds, errors), and a Pulsar cluster's topics, subscriptions and producers.

The model is static structure plus a few explicit events; the generators (`storage`, `requests`,
`backlog`, `producers`) turn it into time series, vectorised over whole chunks of time. Arrays are indexed by
position: broker index (not id), volume index, topic index, client index.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

MINUTE_MS = 60_000
HOUR_MS = 3_600_000
DAY_MS = 86_400_000

ROLE_PRODUCER, ROLE_CONSUMER, ROLE_ADMIN = 0, 1, 2

ERROR_REASONS = ("DESCRIBE_CLUSTER_ERROR", "DESCRIBE_LOG_DIR_ERROR", "SAFETY_TIMEOUT")


@dataclass(frozen=True)
class Absence:
    """A broker missing from the active set during [start_ms, end_ms) (end None: it never returns).

    `inconsistent`: in the first round of the absence `describeCluster` still lists the broker but
    `describeLogDirs` returns nothing for it (spec: Fallback Throttle Factor, inconsistent state).
    A broker that joins later is absent from before the start until it joins.
    """

    broker: int
    start_ms: int
    end_ms: int | None
    inconsistent: bool = False


@dataclass(frozen=True)
class ErrorWindow:
    """Collection rounds in [start_ms, end_ms) fail with `reason`."""

    start_ms: int
    end_ms: int
    reason: str


@dataclass(frozen=True)
class Burst:
    """A client produces `multiplier` times its usual rate in [start_ms, end_ms)."""

    client: int
    start_ms: int
    end_ms: int
    multiplier: float


@dataclass(frozen=True)
class MutationBurst:
    """An admin client sends `per_minute` controller mutation requests of `value` each, every
    minute of [start_ms, end_ms) (e.g. a provisioning job creating topics)."""

    client: int
    start_ms: int
    end_ms: int
    per_minute: int
    value: int


@dataclass(frozen=True)
class Ramp:
    """A topic's rate grows from `start_ms` on: times `1 + growth_per_day x days` (linear) or
    `exp(growth_per_day x days)` (exponential), days counted from `start_ms`."""

    topic: int
    start_ms: int
    growth_per_day: float
    exponential: bool = False

    def multiplier(self, ts_ms: np.ndarray) -> np.ndarray:
        """The rate multiplier at `ts_ms` (1 before the start)."""
        days = np.maximum(0, ts_ms - self.start_ms) / DAY_MS
        return np.exp(self.growth_per_day * days) if self.exponential else 1.0 + self.growth_per_day * days


@dataclass
class Replicas:
    """Every partition replica: one row per (topic, partition, replica), each on one volume."""

    topic: np.ndarray  # topic index
    partition: np.ndarray  # partition index within the topic
    volume: np.ndarray  # volume index
    weight: np.ndarray  # float64: the partition's share of its topic's bytes
    leader: np.ndarray  # bool: the partition's first replica (its leader)

    def __len__(self) -> int:
        return len(self.topic)

    def placement(self, n_topics: int, n_volumes: int) -> np.ndarray:
        """(topics, volumes): the share of each topic's bytes each volume stores (sums to the RF)."""
        out = np.zeros((n_topics, n_volumes))
        np.add.at(out, (self.topic, self.volume), self.weight)
        return out

    def extend(self, other: Replicas) -> None:
        """Append `other`'s replicas."""
        for name in ("topic", "partition", "volume", "weight", "leader"):
            setattr(self, name, np.concatenate([getattr(self, name), getattr(other, name)]))


@dataclass
class Brokers:
    ids: np.ndarray  # int64 broker ids, by broker index
    absences: list[Absence] = field(default_factory=list)


@dataclass
class Volumes:
    """One row per log dir; each log dir is its own volume (JBOD)."""

    broker: np.ndarray  # broker index of each volume
    log_dir: list[str]
    total_bytes: np.ndarray  # int64
    base_used_bytes: np.ndarray  # int64: bytes used by anything but Kafka's replicas (constant)


@dataclass
class Topics:
    """Kafka topics. Rates are bytes/s at the daily mean, before replication."""

    names: list[str]
    partitions: np.ndarray
    replication_factor: np.ndarray
    base_rate: np.ndarray  # float64 bytes/s
    diurnal_amplitude: np.ndarray  # 0..1: the rate swings by this fraction over a day
    peak_hour: np.ndarray  # UTC hour of the daily peak
    retention_ms: np.ndarray  # int64, 0 = no time-based deletion (compacted or unlimited)
    segment_bytes: np.ndarray  # int64: retention deletes whole segments
    created_ms: np.ndarray  # int64: no traffic before (a topic created during the run)
    placement: np.ndarray  # (topics, volumes): share of a topic's bytes each volume stores (sums to RF)
    leader_share: np.ndarray  # (topics, brokers): share of a topic's produce bytes each broker leads
    replicas: Replicas  # the replicas behind `placement`
    age_ms: np.ndarray  # int64: how long a topic has been written at the start (kept when retention is 0)
    noise_sigma: float = 0.15  # per round log-normal noise of a topic's rate
    ramps: list[Ramp] = field(default_factory=list)  # topics whose rate grows during the run

    def __len__(self) -> int:
        return len(self.names)


@dataclass
class Clients:
    """Kafka clients: producers write a share of one topic's bytes, consumers fetch a share of one
    topic's bytes, admin clients send controller mutations (create topics/partitions)."""

    user: list[str]
    client_id: list[str]
    role: np.ndarray  # ROLE_*
    topic: np.ndarray  # topic index (-1 for admin clients)
    share: np.ndarray  # producers: share of the topic's bytes (sums to 1 per topic); consumers: fetched share
    burst_probability: np.ndarray  # per client and 10-minute slot
    burst_median: float = 3.0
    mutation_probability: float = 0.02  # admin clients: chance of a mutation request per minute
    admin_broker: int = 0  # broker index that admin clients send mutations to
    bursts: list[Burst] = field(default_factory=list)
    mutation_bursts: list[MutationBurst] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.client_id)


@dataclass
class Collection:
    """How collection rounds fail."""

    error_probability: float = 0.002  # per round
    burst_probability: float = 0.01  # per hour: a run of consecutive failed rounds
    burst_rounds: tuple[int, int] = (2, 6)
    reason_weights: tuple[float, float, float] = (0.3, 0.5, 0.2)  # by ERROR_REASONS
    missing_broker_probability: float = 0.0005  # per round and broker: its log dirs are not returned
    errors: list[ErrorWindow] = field(default_factory=list)


@dataclass
class Subscription:
    """A Pulsar subscription's consumer behaviour.

    `healthy`: keeps up (only in-flight messages unacknowledged); `slow`: acknowledges
    `slow_fraction` of the publish rate; `stalls`: keeps up, but stops during `stall_windows` and
    random stalls (probability per hour), then catches up at `catchup` times the publish rate.
    """

    name: str
    mode: str = "healthy"
    slow_fraction: float = 0.8
    stall_probability: float = 0.0
    stall_windows: list[tuple[int, int]] = field(default_factory=list)
    catchup: float = 2.0
    initial_backlog_bytes: int = 0


@dataclass
class PulsarTopic:
    """A persistent Pulsar topic; `partitions` 0 means not partitioned."""

    name: str  # persistent://tenant/namespace/name
    partitions: int
    rate: float  # bytes/s published at the daily mean (whole topic)
    entry_bytes: int  # mean entry (batch) size
    subscriptions: list[Subscription]
    diurnal_amplitude: float = 0.3
    peak_hour: float = 14.0


@dataclass(frozen=True)
class PulsarConnection:
    """A Pulsar client connection (one TCP channel) to the broker owning its producers' topics.

    A `ThrottleProducer` is answered after `receipt_ms` (the median of a log-normal, sigma 0.6),
    or, with these probabilities, late (after the broker's wait) or never; a connection without
    `supports_throttle` never answers (docs/notices.md, Input).
    """

    connection_id: str
    broker: str
    supports_throttle: bool
    receipt_ms: float = 8.0
    late_probability: float = 0.0
    lost_probability: float = 0.0


@dataclass(frozen=True)
class PulsarProducer:
    """A producer on a connection: Poisson publish requests (batches) at `requests_per_s`.

    A request carries `1 + floor((messages - 1) x noise)` messages of about `message_bytes` each;
    its persistence takes `publish_latency_ms` (the median of a log-normal, sigma 0.5). The rate
    follows the daily cycle `1 + a cos(2 pi (hour - peak) / 24)`.
    """

    connection: int  # index into ProducerTraffic.connections
    producer_id: int
    topic: str
    requests_per_s: float
    message_bytes: float
    messages: float = 1.0
    publish_latency_ms: float = 4.0
    diurnal_amplitude: float = 0.0
    peak_hour: float = 14.0


@dataclass(frozen=True)
class PublishBurst:
    """Producers (indices) publish `rate` times as many requests of `size` times the bytes in
    [start_ms, end_ms); with `publish_latency_ms` set, their requests take that long (the median) to
    persist (a slow bookie)."""

    producers: tuple[int, ...]
    start_ms: int
    end_ms: int
    rate: float = 1.0
    size: float = 1.0
    publish_latency_ms: float | None = None


@dataclass
class ProducerTraffic:
    """The Pulsar producers of `producer_traffic` and their explicit events."""

    connections: list[PulsarConnection]
    producers: list[PulsarProducer]
    bursts: list[PublishBurst] = field(default_factory=list)


@dataclass
class ClusterModel:
    """Everything a scenario decides; the generators only read it."""

    cluster: str
    start_ms: int
    end_ms: int
    interval_ms: int  # storage collection rounds
    brokers: Brokers
    volumes: Volumes
    topics: Topics
    clients: Clients
    collection: Collection
    pulsar: list[PulsarTopic]
    window_start_ms: int  # request and backlog kinds cover [window_start_ms, window_end_ms)
    window_end_ms: int
    requests_per_minute: float  # per client and broker connection
    max_request_bytes: int | None  # more requests when a minute's bytes need them (None: no cap)
    backlog_check_ms: int
    retention_check_ms: int = 300_000  # Kafka log.retention.check.interval.ms
    partition_interval_ms: int = 300_000  # `partition_sizes` every this often (a multiple of interval_ms)
    jitter_ms: int = 2_000  # a round's timestamp lands up to this late
    # `producer_traffic`: the scenario's Pulsar producers (None: derived from `pulsar`)
    producers: ProducerTraffic | None = None
    # configuration files written beside the telemetry (file name -> text)
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def rounds(self) -> int:
        return (self.end_ms - self.start_ms) // self.interval_ms
