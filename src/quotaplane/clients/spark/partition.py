"""One partition of requests decided in one Python call (`mapInArrow`), Arrow in and out.

A partition holds whole (config, broker)s (the requests are hash-partitioned by them). The call

1. resolves each distinct (config, type, user, client id) of its rows with the reference resolver
   (`QuotaResolver`: tags, limit, level; the configurations travel with the function): names are
   dictionary-encoded in Arrow, so only the distinct ones become Python strings;
2. sorts the rows by (config, broker, type, tags, time, file, row) in numpy and evaluates each
   (config, broker, type) run with `groups.decider` (unrecorded types: limit and level only);
3. answers the decisions in the order the rows came, batch by batch: the columns that pass
   through are the received Arrow arrays, the tags are taken by key in Arrow.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T

from quotaplane.clients.engine import kernels
from quotaplane.clients.engine.entities import ClientQuotaConfig
from quotaplane.clients.engine.evaluate import is_recorded, records_every_type
from quotaplane.clients.engine.quota_types import QUOTA_TYPES, QUOTA_VALUE_TYPES
from quotaplane.clients.engine.resolution import QuotaResolver
from quotaplane.clients.engine.settings import ClientQuotaSettings
from quotaplane.clients.spark.groups import SOURCES, FactorTable, decider, units_of

Batches = Iterator[pa.RecordBatch]

# What the per-partition call reads: the telemetry fields, `config_id`, and the input order.
INPUT_COLUMNS = ["config_id", "broker_id", "quota_type", "user", "client_id", "ts_ms", "value", "_file",
                 "_row"]

# The per-request decisions (plus `quota_value` when the KIP-786 metric is on).
DECISION_FIELDS = [
    ("config_id", T.LongType()), ("broker_id", T.LongType()), ("quota_type", T.StringType()),
    ("tag_user", T.StringType()), ("tag_client_id", T.StringType()), ("ts_ms", T.LongType()),
    ("user", T.StringType()), ("client_id", T.StringType()), ("value", T.DoubleType()),
    ("value_units", T.LongType()), ("recorded", T.BooleanType()), ("quota_limit", T.DoubleType()),
    ("quota_level", T.IntegerType()), ("quota_source", T.StringType()), ("throttle_factor", T.DoubleType()),
    ("rate", T.DoubleType()), ("window_ms", T.LongType()), ("tokens", T.DoubleType()),
    ("utilisation_pct", T.DoubleType()), ("violated", T.BooleanType()), ("throttled", T.BooleanType()),
    ("throttle_time_ms", T.IntegerType()), ("seq", T.LongType()), ("_file", T.LongType()),
    ("_row", T.LongType()),
]
QUOTA_VALUE = ("quota_value", T.DoubleType())

# never null; with every request recorded (every type of every configuration), neither these
_NEVER_NULL = frozenset({"recorded", "violated", "throttled", "throttle_time_ms"})
_ALL_RECORDED_NEVER_NULL = frozenset({"broker_id", "ts_ms", "value", "value_units", "seq"})


def decision_schema(quota_value_metric: bool, all_recorded: bool = False) -> T.StructType:
    fields = [*DECISION_FIELDS, QUOTA_VALUE] if quota_value_metric else DECISION_FIELDS
    never = _NEVER_NULL | _ALL_RECORDED_NEVER_NULL if all_recorded else _NEVER_NULL
    return T.StructType([T.StructField(name, kind, name not in never) for name, kind in fields])


@dataclass(frozen=True)
class _Keys:
    """The resolved distinct (config, type, user, client id) keys of a partition, by key index."""

    tag_user: pa.Array
    tag_client_id: pa.Array
    tag_code: np.ndarray  # the sharing group's tags, as a code
    base_limit: np.ndarray  # NaN: none
    level: np.ndarray  # 0: none
    recorded: np.ndarray


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    """Dictionary codes of a string column, and its dictionary."""
    encoded = pc.dictionary_encode(column).combine_chunks()
    return (encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64),
            encoded.dictionary.to_pylist())


def _numbers(column: pa.ChunkedArray, dtype: type) -> np.ndarray:
    return column.fill_null(0).to_numpy().astype(dtype, copy=False)


def _dense(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct values, each value's index among them)."""
    distinct, inverse = np.unique(values, return_inverse=True)
    return distinct, inverse.reshape(-1)


def _floats(values: np.ndarray) -> pa.Array:
    return pa.array(values, type=pa.float64(), from_pandas=True)  # NaN: null


_ARROW = {T.LongType(): pa.int64(), T.IntegerType(): pa.int32(), T.DoubleType(): pa.float64(),
          T.StringType(): pa.string(), T.BooleanType(): pa.bool_()}


def partition_function(configs: Mapping[int, ClientQuotaConfig], settings: ClientQuotaSettings,
                       factors: FactorTable, schema: T.StructType) -> Callable[[Batches], Batches]:
    """What each partition's call runs: `INPUT_COLUMNS` in, the columns of `schema` (some of
    `decision_schema`) out (see the module doc)."""
    return _PartitionCall(configs, settings, factors, schema)


class _PartitionCall:
    """The per-partition call, with what it carries to the Python workers: a resolver per
    configuration, the run decider and the output's Arrow schema."""

    def __init__(self, configs: Mapping[int, ClientQuotaConfig], settings: ClientQuotaSettings,
                 factors: FactorTable, schema: T.StructType) -> None:
        self.settings = settings
        self.resolvers = {int(config_id): QuotaResolver(config) for config_id, config in configs.items()}
        self.decide = decider(settings, factors)
        self.type_index = {name: code for code, name in enumerate(QUOTA_TYPES)}
        self.arrow_schema = pa.schema([pa.field(f.name, _ARROW[f.dataType], f.nullable) for f in schema])
        self.sources = pa.array(SOURCES, type=pa.string())
        self.value_types = np.array([name in QUOTA_VALUE_TYPES for name in QUOTA_TYPES])

    def __call__(self, batches: Batches) -> Batches:
        received = [b for b in batches if b.num_rows]
        if not received:
            return
        table = pa.Table.from_batches(received)
        config = _numbers(table.column("config_id"), np.int64)
        broker = _numbers(table.column("broker_id"), np.int64)
        type_name, type_names = _codes(table.column("quota_type"))
        type_code = np.array([self.type_index[name] for name in type_names], dtype=np.int64)[type_name]
        keys, key = self._resolve(table, config, type_code)
        # a run: one (config, broker, type), one `decide`; a group: one sharing group of a run
        brokers, broker_code = _dense(broker)
        run_code = (_dense(config)[1] * brokers.size + broker_code) * len(QUOTA_TYPES) + type_code
        group = run_code * (int(keys.tag_code.max()) + 1) + keys.tag_code[key]
        t = _numbers(table.column("ts_ms"), np.int64)
        order = np.lexsort((_numbers(table.column("_row"), np.int64),
                            _numbers(table.column("_file"), np.int64), t, group))
        decided = self._decide_runs(key[order], run_code[order], group[order], t[order],
                                    _numbers(table.column("value"), np.float64)[order], broker[order],
                                    type_code[order], keys)
        for name, array in decided.items():  # back to the order the rows came in
            decided[name] = np.empty_like(array)
            decided[name][order] = array
        offset = 0
        for batch in received:
            rows = slice(offset, offset + batch.num_rows)
            offset = rows.stop
            yield self._batch(batch, key[rows], type_code[rows], keys,
                              {name: array[rows] for name, array in decided.items()})

    def _resolve(self, table: pa.Table, config: np.ndarray, type_code: np.ndarray
                 ) -> tuple[_Keys, np.ndarray]:
        """The distinct keys of the rows, resolved; and each row's key index."""
        user, users = _codes(table.column("user"))
        client, clients = _codes(table.column("client_id"))
        _, pair = _dense(user * max(len(clients), 1) + client)
        configs_seen, config_code = _dense(config)
        combined = (config_code * len(QUOTA_TYPES) + type_code) * (int(pair.max()) + 1) + pair
        _, first, key = np.unique(combined, return_index=True, return_inverse=True)
        tag_users, tag_clients, limits, levels, flags, tag_codes = [], [], [], [], [], []
        tag_ids: dict[tuple[int, int, str, str], int] = {}
        for row in first.tolist():
            config_id, code = int(configs_seen[config_code[row]]), int(type_code[row])
            quota_type, resolver = QUOTA_TYPES[code], self.resolvers[config_id]
            tags, resolved = resolver.resolve(quota_type, users[user[row]], clients[client[row]])
            tag_users.append(tags.user)
            tag_clients.append(tags.client_id)
            limits.append(np.nan if resolved.limit is None else float(resolved.limit))
            levels.append(resolved.level or 0)
            flags.append(is_recorded(resolver, quota_type, self.settings))
            tag_codes.append(tag_ids.setdefault((config_id, code, tags.user, tags.client_id), len(tag_ids)))
        keys = _Keys(pa.array(tag_users, type=pa.string()), pa.array(tag_clients, type=pa.string()),
                     np.array(tag_codes, dtype=np.int64), np.array(limits, dtype=np.float64),
                     np.array(levels, dtype=np.int64), np.array(flags, dtype=bool))
        return keys, key.reshape(-1)

    def _decide_runs(self, key: np.ndarray, run_code: np.ndarray, group: np.ndarray, t: np.ndarray,
                     value: np.ndarray, broker: np.ndarray, type_code: np.ndarray,
                     keys: _Keys) -> dict[str, np.ndarray]:
        """The decisions of every row (sorted), run by run."""
        n = key.size
        recorded, base = keys.recorded[key], keys.base_limit[key]
        out = {"units": np.zeros(n, np.int64), "limit": base.copy(),
               "source": np.where(np.isnan(base), 0, 1), "factor": np.full(n, np.nan),
               "rate": np.full(n, np.nan), "window": np.zeros(n, np.int64), "tokens": np.full(n, np.nan),
               "violated": np.zeros(n, bool), "throttle": np.zeros(n, np.int64), "seq": np.zeros(n, np.int64)}
        cuts = [*np.flatnonzero(np.r_[True, run_code[1:] != run_code[:-1]]).tolist(), n]
        for a, b in itertools.pairwise(cuts):
            quota_type = QUOTA_TYPES[int(type_code[a])]
            if not recorded[a]:
                out["units"][a:b] = units_of(quota_type, value[a:b])
                continue
            d = self.decide(quota_type, int(broker[a]), t[a:b], value[a:b], base[a:b], group[a:b])
            r = d.result
            for name, array in (("units", d.units), ("limit", d.limit), ("source", d.source),
                                ("factor", d.factor), ("rate", r.rate), ("window", r.window_ms),
                                ("tokens", r.tokens), ("violated", r.violated), ("throttle", r.throttle_ms),
                                ("seq", d.seq)):
                out[name][a:b] = array
        out["recorded"] = recorded
        return out

    def _batch(self, batch: pa.RecordBatch, key: np.ndarray, type_code: np.ndarray, keys: _Keys,
               d: dict[str, np.ndarray]) -> pa.RecordBatch:
        """One received batch with its decisions: the schema's columns, passed through or made."""
        recorded, throttle, level = d["recorded"], d["throttle"], keys.level[key]
        value_type = self.value_types[type_code]
        index = pa.array(key)
        made: dict[str, Callable[[], pa.Array]] = {
            "tag_user": lambda: keys.tag_user.take(index),
            "tag_client_id": lambda: keys.tag_client_id.take(index),
            "value_units": lambda: pa.array(d["units"], type=pa.int64()),
            "recorded": lambda: pa.array(recorded),
            "quota_limit": lambda: _floats(d["limit"]),
            "quota_level": lambda: pa.array(level.astype(np.int32), mask=level == 0),
            "quota_source": lambda: self.sources.take(pa.array(d["source"])),
            "throttle_factor": lambda: _floats(d["factor"]),
            "rate": lambda: _floats(d["rate"]),
            "window_ms": lambda: pa.array(d["window"], type=pa.int64(), mask=~recorded),
            "tokens": lambda: _floats(d["tokens"]),
            "utilisation_pct": lambda: _floats(kernels.utilisation(d["rate"], d["limit"])),
            "violated": lambda: pa.array(d["violated"]),
            "throttled": lambda: pa.array(throttle > 0),
            "throttle_time_ms": lambda: pa.array(throttle.astype(np.int32)),
            "seq": lambda: pa.array(d["seq"], type=pa.int64(), mask=~recorded),
            "quota_value": lambda: _floats(np.where(recorded & value_type, d["limit"], np.nan)),
        }
        columns = [made[f.name]() if f.name in made else batch.column(f.name).cast(f.type)
                   for f in self.arrow_schema]
        return pa.RecordBatch.from_arrays(columns, schema=self.arrow_schema)


def output_schema(configs: Mapping[int, ClientQuotaConfig], settings: ClientQuotaSettings,
                  columns: Sequence[str] | None = None) -> T.StructType:
    """The decisions' schema (`columns` of it, by default all)."""
    full = decision_schema(settings.quota_value_metric, records_every_type(configs.values(), settings))
    return T.StructType([f for f in full if columns is None or f.name in columns])
