"""Traffic rates as functions of time: daily cycle, weekends, bursts, noise.

A producer's rate is `share x topic base rate x daily cycle x weekend factor x ramp x its burst
factor` (the ramp: a topic whose rate grows during the run, 1 otherwise); a topic's rate is the sum
over its producers, so what the clients send and what the disks store
agree. Everything is evaluated for whole arrays of timestamps at once.
"""

from __future__ import annotations

import numpy as np

from quotaplane.sim.model import DAY_MS, HOUR_MS, ROLE_CONSUMER, ROLE_PRODUCER, ClusterModel
from quotaplane.sim.rng import Fields

BURST_SLOT_MS = 600_000  # random bursts last one 10-minute slot
WEEKEND_FACTOR = 0.75


def diurnal(ts_ms: np.ndarray, amplitude: np.ndarray, peak_hour: np.ndarray) -> np.ndarray:
    """`1 + a cos(2π (hour - peak) / 24)` for timestamps (n,) and series (k,): shape (n, k)."""
    hours = (ts_ms % DAY_MS) / HOUR_MS
    return 1.0 + amplitude[None, :] * np.cos(2.0 * np.pi * (hours[:, None] - peak_hour[None, :]) / 24.0)


def weekly(ts_ms: np.ndarray) -> np.ndarray:
    """`WEEKEND_FACTOR` on Saturdays and Sundays (UTC), else 1; shape (n,)."""
    weekday = (ts_ms // DAY_MS + 3) % 7  # 1970-01-01 was a Thursday; Monday = 0
    return np.where(weekday >= 5, WEEKEND_FACTOR, 1.0)


class RateModel:
    """Rates of one model's topics and clients."""

    def __init__(self, model: ClusterModel, fields: Fields) -> None:
        self.model = model
        self.fields = fields
        clients, topics = model.clients, model.topics
        self.producers = np.flatnonzero(clients.role == ROLE_PRODUCER)
        self.position = np.full(len(clients), -1)
        self.position[self.producers] = np.arange(len(self.producers))
        # (producers, topics): a producer's share of its topic's bytes.
        self.share_matrix = np.zeros((len(self.producers), len(topics)))
        self.share_matrix[np.arange(len(self.producers)), clients.topic[self.producers]] = \
            clients.share[self.producers]
        self.unproduced = self.share_matrix.sum(axis=0) == 0  # topics without modelled producers
        # The long-run mean of each topic's burst factor (a burst multiplies by ~burst_median).
        extra = clients.burst_probability[self.producers] * (clients.burst_median - 1.0)
        self.expected_burst = 1.0 + extra @ self.share_matrix
        self.expected_burst[self.unproduced] = 1.0

    def random_bursts(self, ts_ms: np.ndarray, clients: np.ndarray) -> np.ndarray:
        """Random slot bursts: (n, k) multipliers, 1 outside a burst."""
        slots = ts_ms // BURST_SLOT_MS
        c = self.model.clients
        u = self.fields.uniform("burst", slots[:, None], clients[None, :])
        hit = u < c.burst_probability[clients][None, :]
        size = c.burst_median * self.fields.lognormal_mean_one("burst-size", 0.4, slots[:, None],
                                                               clients[None, :])
        return np.where(hit, np.maximum(size, 1.0), 1.0)

    def client_bursts(self, ts_ms: np.ndarray, clients: np.ndarray) -> np.ndarray:
        """Random and explicit bursts of `clients` at `ts_ms`: (n, k)."""
        factor = self.random_bursts(ts_ms, clients)
        for burst in self.model.clients.bursts:
            cols = np.flatnonzero(clients == burst.client)
            if cols.size:
                inside = (ts_ms >= burst.start_ms) & (ts_ms < burst.end_ms)
                factor[np.ix_(inside, cols)] *= burst.multiplier
        return factor

    def topic_burst_factor(self, ts_ms: np.ndarray) -> np.ndarray:
        """(n, topics): the share-weighted burst factor of each topic's producers (1 without producers)."""
        slots = ts_ms // BURST_SLOT_MS
        unique, inverse = np.unique(slots, return_inverse=True)
        per_slot = self.random_bursts(unique * BURST_SLOT_MS, self.producers)
        factor = (per_slot @ self.share_matrix)[inverse]
        c = self.model.clients
        for burst in c.bursts:
            pos = self.position[burst.client]
            if pos < 0:
                continue
            inside = (ts_ms >= burst.start_ms) & (ts_ms < burst.end_ms)
            extra = c.share[burst.client] * per_slot[inverse[inside], pos] * (burst.multiplier - 1.0)
            factor[inside, c.topic[burst.client]] += extra
        factor[:, self.unproduced] = 1.0
        return factor

    def topic_shape(self, ts_ms: np.ndarray) -> np.ndarray:
        """(n, topics): base rate x daily cycle x weekend factor x ramps x created (no bursts, no noise)."""
        t = self.model.topics
        shape = t.base_rate[None, :] * diurnal(ts_ms, t.diurnal_amplitude, t.peak_hour)
        shape *= weekly(ts_ms)[:, None]
        for ramp in t.ramps:
            shape[:, ramp.topic] *= ramp.multiplier(ts_ms)
        shape *= ts_ms[:, None] >= t.created_ms[None, :]
        return shape

    def topic_rates(self, ts_ms: np.ndarray, rounds: np.ndarray) -> np.ndarray:
        """(n, topics) bytes/s at the rounds' times, with bursts and per-round noise."""
        t = self.model.topics
        noise = self.fields.lognormal_mean_one("topic-noise", t.noise_sigma, rounds[:, None],
                                               np.arange(len(t))[None, :])
        return self.topic_shape(ts_ms) * self.topic_burst_factor(ts_ms) * noise

    def client_rates(self, ts_ms: np.ndarray, clients: np.ndarray) -> np.ndarray:
        """(n, k) bytes/s of producers and consumers (admin clients: 0).

        A producer sends its share of its topic's (burst-free) shape times its own bursts; a
        consumer fetches its share of what the topic's producers send, bursts included.
        """
        c = self.model.clients
        shape = self.topic_shape(ts_ms)
        topic = np.maximum(c.topic[clients], 0)
        rates = shape[:, topic] * c.share[clients][None, :]
        role = c.role[clients]
        produce = role == ROLE_PRODUCER
        if produce.any():
            rates[:, produce] *= self.client_bursts(ts_ms, clients[produce])
        consume = role == ROLE_CONSUMER
        if consume.any():
            rates[:, consume] *= self.topic_burst_factor(ts_ms)[:, topic[consume]]
        rates[:, (role != ROLE_PRODUCER) & (role != ROLE_CONSUMER)] = 0.0
        return rates
