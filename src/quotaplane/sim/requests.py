"""Request telemetry: per-request client quota usage and per-topic produce requests.

A client talks to the brokers that lead partitions of its topic, each connection carrying the
broker's leader share of the client's bytes (renormalised over the brokers that are up). Every
minute a connection sends `requests_per_minute` requests (a fractional part is a probability)
whose sizes sum exactly to the bytes the client's rate gives for that minute. Each produce or fetch
request also uses request-handler time (a `request` row, in ms); admin clients send controller
mutations. The produce requests, seen per topic, are the `topic_requests` rows.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from quotaplane.sim.kinds import QUOTA_TYPES, strings, table
from quotaplane.sim.model import MINUTE_MS, ROLE_ADMIN, ROLE_CONSUMER, ROLE_PRODUCER, ClusterModel
from quotaplane.sim.rates import RateModel
from quotaplane.sim.rng import Fields

PRODUCE, FETCH, REQUEST, MUTATION = range(len(QUOTA_TYPES))  # indices into QUOTA_TYPES
HANDLER_BYTES_PER_MS = 100_000  # request handler throughput behind the request-time model
SPLIT_LOW, SPLIT_HIGH = 0.7, 1.3
# A request is at most SPLIT_HIGH / SPLIT_LOW (< 1.9) times its minute's mean request size.
SPLIT_BOUND = 1.9


def broker_activity(model: ClusterModel, ts_ms: np.ndarray) -> np.ndarray:
    """(n, brokers): whether each broker is in the active set at each time."""
    active = np.ones((len(ts_ms), len(model.brokers.ids)), dtype=bool)
    for a in model.brokers.absences:
        end = np.iinfo(np.int64).max if a.end_ms is None else a.end_ms
        active[:, a.broker] &= ~((ts_ms >= a.start_ms) & (ts_ms < end))
    return active


class RequestGenerator:
    """Chunks of `client_requests` and `topic_requests`, minute by minute over the window."""

    def __init__(self, model: ClusterModel, fields: Fields, chunk_rows: int = 500_000) -> None:
        self.model = model
        self.fields = fields
        self.rates = RateModel(model, fields)
        c, t = model.clients, model.topics
        conn_client, conn_broker, conn_share = [], [], []
        for client in np.flatnonzero((c.role == ROLE_PRODUCER) | (c.role == ROLE_CONSUMER)):
            shares = t.leader_share[c.topic[client]]
            for broker in np.flatnonzero(shares > 0):
                conn_client.append(client)
                conn_broker.append(broker)
                conn_share.append(shares[broker])
        self.conn_client = np.array(conn_client, dtype=np.int64)
        self.conn_broker = np.array(conn_broker, dtype=np.int64)
        self.conn_share = np.array(conn_share, dtype=np.float64)
        # Connections are grouped by client (ascending), so per-client sums are `reduceat`s.
        self.clients, self.conn_starts, self.conn_pos = np.unique(self.conn_client, return_index=True,
                                                                  return_inverse=True)
        self.admins = np.flatnonzero(c.role == ROLE_ADMIN)
        # Rows a minute may need: the request count, or more when requests are capped in size
        # (allowing twice the mean rate for daily peaks and bursts).
        per_conn = np.full(len(self.conn_client), float(np.ceil(model.requests_per_minute)))
        if model.max_request_bytes and len(self.conn_client):
            topic_rate = t.base_rate[c.topic[self.conn_client]]
            mean_bytes = topic_rate * c.share[self.conn_client] * self.conn_share * 60
            per_conn = np.maximum(per_conn, np.ceil(2 * SPLIT_BOUND * mean_bytes / model.max_request_bytes))
        per_minute = max(1, int(per_conn.sum()) * 2 + len(self.admins))
        self.chunk_minutes = max(1, chunk_rows // per_minute)

    def chunks(self) -> Iterator[dict[str, pa.Table]]:
        m = self.model
        first = (m.window_start_ms - m.start_ms) // MINUTE_MS
        end = -(-(m.window_end_ms - m.start_ms) // MINUTE_MS)
        for k0 in range(first, end, self.chunk_minutes):
            minutes = np.arange(k0, min(end, k0 + self.chunk_minutes), dtype=np.int64)
            yield self._chunk(minutes)

    def _chunk(self, minutes: np.ndarray) -> dict[str, pa.Table]:
        m, f = self.model, self.fields
        begin = m.start_ms + minutes * MINUTE_MS
        active = broker_activity(m, begin + MINUTE_MS // 2)
        ts_parts, broker_parts, client_parts, type_parts, value_parts = [], [], [], [], []
        if len(self.conn_client):
            ts, conn, size = self._traffic(minutes, begin, active)
            client = self.conn_client[conn]
            broker = self.conn_broker[conn]
            role = m.clients.role[client]
            kind = np.where(role == ROLE_PRODUCER, PRODUCE, FETCH)
            # Request-handler time: a fixed cost plus the bytes at the handler's throughput, noisy,
            # with a rare slow request (a slow disk, a long GC pause).
            key = (ts, conn)
            slow = np.where(f.uniform("slow-request", *key) < 0.001,
                            10.0 + 40.0 * f.uniform("slow-by", *key), 1.0)
            noise = f.lognormal_mean_one("request-time", 0.5, *key)
            millis = (0.2 + size / HANDLER_BYTES_PER_MS) * noise * slow
            ts_parts += [ts, ts]
            broker_parts += [broker, broker]
            client_parts += [client, client]
            type_parts += [kind, np.full(len(ts), REQUEST)]
            value_parts += [size.astype(np.float64), np.round(millis, 3)]
        ts, broker, client, value = self._mutations(minutes, begin, active)
        ts_parts.append(ts)
        broker_parts.append(broker)
        client_parts.append(client)
        type_parts.append(np.full(len(ts), MUTATION))
        value_parts.append(value)
        ts, broker = np.concatenate(ts_parts), np.concatenate(broker_parts)
        client = np.concatenate(client_parts)
        qtype, value = np.concatenate(type_parts), np.concatenate(value_parts)
        inside = (ts >= m.window_start_ms) & (ts < m.window_end_ms)
        order = np.lexsort((qtype[inside], client[inside], broker[inside], ts[inside]))
        ts, broker, client = ts[inside][order], broker[inside][order], client[inside][order]
        qtype, value = qtype[inside][order], value[inside][order]
        c = m.clients
        requests = table("client_requests", {
            "ts_ms": pa.array(ts),
            "broker_id": pa.array(m.brokers.ids[broker]),
            "user": strings(c.user, client),
            "client_id": strings(c.client_id, client),
            "quota_type": strings(list(QUOTA_TYPES), qtype),
            "value": pa.array(value, type=pa.float64()),
        })
        produce = qtype == PRODUCE
        topics = table("topic_requests", {
            "ts_ms": pa.array(ts[produce]),
            "broker_id": pa.array(m.brokers.ids[broker[produce]]),
            "topic": strings(m.topics.names, c.topic[client[produce]]),
            "bytes": pa.array(value[produce].astype(np.int64)),
        })
        return {"client_requests": requests, "topic_requests": topics}

    def _traffic(self, minutes: np.ndarray, begin: np.ndarray,
                 active: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Produce and fetch requests: (ts, connection index, bytes), one entry per request.

        Requests are ragged (a connection's count varies by minute), so they are laid out flat:
        each request knows its (minute, connection) group and its slot within the group.
        """
        m, f = self.model, self.fields
        n, n_conn = len(minutes), len(self.conn_client)
        rates = self.rates.client_rates(begin + MINUTE_MS // 2, self.clients)[:, self.conn_pos]
        up = active[:, self.conn_broker]
        # A broker that is down loses its leaderships: its share moves to the client's other brokers.
        live = np.add.reduceat(self.conn_share[None, :] * up, self.conn_starts, axis=1)[:, self.conn_pos]
        share = np.divide(self.conn_share[None, :] * up, live, out=np.zeros((n, n_conn)), where=live > 0)
        total = np.floor(rates * share * 60.0).astype(np.int64)  # bytes per minute per connection
        conn = np.arange(n_conn)[None, :]
        rpm = m.requests_per_minute
        count = np.floor(rpm) + (f.uniform("extra-request", minutes[:, None], conn) < rpm - np.floor(rpm))
        if m.max_request_bytes:  # enough requests that none, at its largest weight share, is too big
            count = np.maximum(count, np.ceil(total * SPLIT_BOUND / m.max_request_bytes))
        count = np.where(total > 0, count, 0).astype(np.int64).ravel()
        group = np.repeat(np.arange(n * n_conn), count)
        first = np.cumsum(count) - count
        slot = np.arange(len(group)) - first[group]
        g_minute, g_conn = minutes[group // n_conn], group % n_conn
        key = (g_minute, g_conn, slot)
        # A request's share of its minute is weight / sum of weights, weights uniform in
        # [SPLIT_LOW, SPLIT_HIGH]. Integer weights keep a group's running sums exact, whatever else
        # is in the chunk.
        spread = SPLIT_LOW + (SPLIT_HIGH - SPLIT_LOW) * f.uniform("request-size", *key)
        weight = np.floor(spread * 65_536).astype(np.int64)
        cum = np.cumsum(weight)
        last = first + count - 1
        base = np.where(first > 0, cum[np.maximum(first - 1, 0)], 0) if len(cum) else np.zeros_like(first)
        within = cum - base[group]
        sums = (cum[np.maximum(last, 0)] - base)[group] if len(cum) else within
        bounds = np.floor(total.ravel()[group] * (within / sums)).astype(np.int64)
        previous = np.where(slot > 0, np.roll(bounds, 1), 0)
        size = bounds - previous
        offset = np.floor((slot + f.uniform("request-at", *key)) / count[group] * MINUTE_MS).astype(np.int64)
        ts = begin[group // n_conn] + offset
        keep = size > 0
        return ts[keep], g_conn[keep], size[keep]

    def _mutations(self, minutes: np.ndarray, begin: np.ndarray,
                   active: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Controller mutation requests of admin clients: (ts, broker index, client, mutations)."""
        f, c = self.fields, self.model.clients
        admins = self.admins
        first_up = np.argmax(active, axis=1)
        broker_at = np.where(active[:, c.admin_broker], c.admin_broker, first_up)
        key = (minutes[:, None], admins[None, :])
        hit = f.uniform("mutation", *key) < c.mutation_probability
        value = np.minimum(200.0, 1.0 + np.floor(2.0 * f.lognormal_mean_one("mutation-size", 1.0, *key)))
        at = begin[:, None] + np.floor(f.uniform("mutation-at", *key) * MINUTE_MS).astype(np.int64)
        ri, ai = np.nonzero(hit)
        ts, broker, client, values = [at[ri, ai]], [broker_at[ri]], [admins[ai]], [value[ri, ai]]
        for burst in c.mutation_bursts:
            rows = np.flatnonzero((begin >= burst.start_ms) & (begin < burst.end_ms))
            slot = np.arange(burst.per_minute)
            offset = np.floor((slot[None, :] + f.uniform("mutation-burst-at", minutes[rows][:, None],
                                                          burst.client, slot[None, :]))
                              / burst.per_minute * MINUTE_MS).astype(np.int64)
            ts.append((begin[rows][:, None] + offset).ravel())
            broker.append(np.repeat(broker_at[rows], burst.per_minute))
            client.append(np.full(len(rows) * burst.per_minute, burst.client))
            values.append(np.full(len(rows) * burst.per_minute, float(burst.value)))
        return (np.concatenate(ts).astype(np.int64), np.concatenate(broker).astype(np.int64),
                np.concatenate(client).astype(np.int64), np.concatenate(values))
