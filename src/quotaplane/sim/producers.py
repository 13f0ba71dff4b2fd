"""Producer traffic: the publish requests Pulsar brokers read from their producers' connections.

Each producer (`PulsarProducer`) publishes requests (batches) as a Poisson process: per second, a
Poisson count at its rate (times its daily cycle and any burst), at uniform times within the second.
A request's messages, bytes, persistence latency and the connection's receipt latency are noisy
around the producer's and connection's values (docs/simulator.md, Producer traffic). Every value is
a pure function of (seed, stream, producer, second, slot), so the rows do not depend on chunking.

A scenario gives its producers (`ClusterModel.producers`); otherwise they are derived from its Pulsar
topics (`derived_traffic`): one connection per topic, one producer per partition, the request count
bounded like the Kafka requests (`requests_per_minute` per producer).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from quotaplane.notices.config import DEFAULT_RECEIPT_WAIT_MS
from quotaplane.sim.kinds import strings, table
from quotaplane.sim.model import ClusterModel, ProducerTraffic, PulsarConnection, PulsarProducer
from quotaplane.sim.rates import diurnal
from quotaplane.sim.rng import Fields

SECOND_MS = 1_000
POISSON_EXACT_MAX = 30.0  # above this mean, a Poisson count is drawn from its normal approximation
DERIVED_BROKERS = 3  # derived traffic: topics spread over this many Pulsar brokers
DERIVED_MESSAGE_BYTES = 1_024
LATE_MIN_MS, LATE_SPREAD_MS = 20, 480  # a late receipt comes 20-500 ms after the broker's wait


def poisson(fields: Fields, stream: str, mean: np.ndarray, *keys: object) -> np.ndarray:
    """Poisson counts of `mean` (any shape), one per broadcast key: the inverse of the CDF of a
    uniform, or the rounded normal approximation for means above `POISSON_EXACT_MAX`."""
    mean = np.asarray(mean, dtype=np.float64)
    u = np.broadcast_to(fields.uniform(stream, *keys), mean.shape)
    z = np.broadcast_to(fields.normal(stream + "/normal", *keys), mean.shape)
    large = mean > POISSON_EXACT_MAX
    count = np.where(large, np.maximum(0.0, np.round(mean + np.sqrt(mean) * z)), 0.0).astype(np.int64)
    small = ~large & (mean > 0)
    lam, target = mean[small], u[small]
    term = np.exp(-lam)
    cdf = term.copy()
    k = np.zeros(len(lam), dtype=np.int64)
    searching = target > cdf
    j = 0
    while searching.any() and j < 4 * POISSON_EXACT_MAX:
        j += 1
        term = term * lam / j
        cdf = cdf + term
        k += searching
        searching &= target > cdf
    count[small] = k
    return count


def derived_traffic(model: ClusterModel, fields: Fields) -> ProducerTraffic:
    """Producers of the model's Pulsar topics: a connection per topic (on one of `DERIVED_BROKERS`
    brokers, about half of them supporting throttle notices), a producer per partition publishing its
    share of the topic's rate in at most `requests_per_minute` requests a minute."""
    connections: list[PulsarConnection] = []
    producers: list[PulsarProducer] = []
    per_s = model.requests_per_minute / 60.0
    for ti, topic in enumerate(model.pulsar):
        tenant, _, local = topic.name.split("://", 1)[1].split("/", 2)
        supports = bool(fields.uniform("producer-supports-throttle", ti)[0] < 0.5)
        connections.append(PulsarConnection(
            connection_id=f"{tenant}-{local}-producer/10.40.{ti // 250}.{ti % 250 + 1}:{40_000 + ti}",
            broker=f"pulsar-broker-{ti % DERIVED_BROKERS}", supports_throttle=supports,
            late_probability=0.02, lost_probability=0.01))
        count = max(1, topic.partitions)
        rate = topic.rate / count
        requests = min(per_s, rate / topic.entry_bytes)
        messages = max(1.0, rate / requests / DERIVED_MESSAGE_BYTES)
        for p in range(count):
            producers.append(PulsarProducer(
                connection=ti, producer_id=p,
                topic=f"{topic.name}-partition-{p}" if topic.partitions else topic.name,
                requests_per_s=requests, message_bytes=rate / requests / messages, messages=messages,
                diurnal_amplitude=topic.diurnal_amplitude, peak_hour=topic.peak_hour))
    return ProducerTraffic(connections, producers)


class ProducerTrafficGenerator:
    """Chunks of `producer_traffic`, second by second over the window."""

    def __init__(self, model: ClusterModel, fields: Fields, chunk_rows: int = 500_000) -> None:
        self.model = model
        self.fields = fields
        traffic = model.producers if model.producers is not None else derived_traffic(model, fields)
        self.traffic = traffic
        conns, prods = traffic.connections, traffic.producers
        self.connection_ids = [c.connection_id for c in conns]
        self.brokers = sorted({c.broker for c in conns})
        self.conn_broker = np.array([self.brokers.index(c.broker) for c in conns], dtype=np.int64)
        self.supports = np.array([c.supports_throttle for c in conns], dtype=bool)
        self.receipt_ms = np.array([c.receipt_ms for c in conns], dtype=np.float64)
        self.late = np.array([c.late_probability for c in conns], dtype=np.float64)
        self.lost = np.array([c.lost_probability for c in conns], dtype=np.float64)
        self.topics = sorted({p.topic for p in prods})
        self.conn = np.array([p.connection for p in prods], dtype=np.int64)
        self.producer_id = np.array([p.producer_id for p in prods], dtype=np.int64)
        self.topic = np.array([self.topics.index(p.topic) for p in prods], dtype=np.int64)
        self.rate = np.array([p.requests_per_s for p in prods], dtype=np.float64)
        self.message_bytes = np.array([p.message_bytes for p in prods], dtype=np.float64)
        self.messages = np.array([p.messages for p in prods], dtype=np.float64)
        self.latency = np.array([p.publish_latency_ms for p in prods], dtype=np.float64)
        self.amplitude = np.array([p.diurnal_amplitude for p in prods], dtype=np.float64)
        self.peak = np.array([p.peak_hour for p in prods], dtype=np.float64)
        peak_rate = self.rate * (1.0 + self.amplitude)
        for burst in traffic.bursts:
            peak_rate[list(burst.producers)] *= max(1.0, burst.rate)
        # A chunk holds about `chunk_rows` rows, and at most `chunk_rows` (second, producer) cells.
        per_second = max(1, int(np.ceil(1.5 * peak_rate.sum())), len(prods))
        self.chunk_seconds = max(1, chunk_rows // per_second)

    def chunks(self) -> Iterator[dict[str, pa.Table]]:
        m = self.model
        if not len(self.rate):
            return
        first = (m.window_start_ms - m.start_ms) // SECOND_MS
        end = -(-(m.window_end_ms - m.start_ms) // SECOND_MS)
        for s0 in range(first, end, self.chunk_seconds):
            yield {"producer_traffic": self._chunk(np.arange(s0, min(end, s0 + self.chunk_seconds)))}

    def _effects(self, begin: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(seconds, producers): the burst rate and size multipliers, and the latency median."""
        shape = (len(begin), len(self.rate))
        rate, size = np.ones(shape), np.ones(shape)
        latency = np.broadcast_to(self.latency, shape).copy()
        for burst in self.traffic.bursts:
            rows = (begin >= burst.start_ms) & (begin < burst.end_ms)
            cols = list(burst.producers)
            at = np.ix_(rows, cols)
            rate[at] *= burst.rate
            size[at] *= burst.size
            if burst.publish_latency_ms is not None:
                latency[at] = burst.publish_latency_ms
        return rate, size, latency

    def _chunk(self, seconds: np.ndarray) -> pa.Table:
        m, f = self.model, self.fields
        begin = m.start_ms + seconds * SECOND_MS
        n, k = len(seconds), len(self.rate)
        rate_x, size_x, latency = self._effects(begin)
        mean = self.rate[None, :] * diurnal(begin + SECOND_MS // 2, self.amplitude, self.peak) * rate_x
        count = poisson(f, "publish-count", mean, seconds[:, None], np.arange(k)[None, :]).ravel()
        group = np.repeat(np.arange(n * k), count)
        slot = np.arange(len(group)) - (np.cumsum(count) - count)[group]
        row, prod = group // k, group % k
        key = (seconds[row], prod, slot)
        ts = begin[row] + np.floor(f.uniform("publish-at", *key) * SECOND_MS).astype(np.int64)
        messages = 1 + np.floor((self.messages[prod] - 1.0)
                                * f.lognormal_mean_one("publish-messages", 0.4, *key)).astype(np.int64)
        size = np.maximum(1, np.round(messages * self.message_bytes[prod] * size_x.ravel()[group]
                                      * f.lognormal_mean_one("publish-bytes", 0.25, *key))).astype(np.int64)
        persisted = np.floor(latency.ravel()[group]
                             * f.lognormal_mean_one("publish-latency", 0.5, *key)).astype(np.int64)
        conn = self.conn[prod]
        u = f.uniform("receipt", *key)
        lost, late = self.lost[conn], self.late[conn]
        in_time = np.minimum(DEFAULT_RECEIPT_WAIT_MS, np.floor(
            self.receipt_ms[conn] * f.lognormal_mean_one("receipt-in-time", 0.6, *key))).astype(np.int64)
        late_ms = DEFAULT_RECEIPT_WAIT_MS + LATE_MIN_MS + np.floor(
            LATE_SPREAD_MS * f.uniform("receipt-late", *key)).astype(np.int64)
        receipt = np.where(u < lost + late, late_ms, in_time)
        no_receipt = ~self.supports[conn] | (u < lost)
        inside = (ts >= m.window_start_ms) & (ts < m.window_end_ms)
        pick = np.flatnonzero(inside)
        pick = pick[np.lexsort((self.topic[prod[pick]], self.producer_id[prod[pick]], conn[pick], ts[pick]))]
        ts, prod, conn = ts[pick], prod[pick], conn[pick]
        return table("producer_traffic", {
            "ts_ms": pa.array(ts),
            "connection_id": strings(self.connection_ids, conn),
            "producer_id": pa.array(self.producer_id[prod]),
            "topic": strings(self.topics, self.topic[prod]),
            "bytes": pa.array(size[pick]),
            "messages": pa.array(messages[pick]),
            "supports_throttle": pa.array(self.supports[conn]),
            "receipt_latency_ms": pa.array(receipt[pick], mask=no_receipt[pick]),
            "publish_latency_ms": pa.array(persisted[pick]),
            "broker": strings(self.brokers, self.conn_broker[conn]),
        })
