"""Every check of a set of topics at once, with numpy over Arrow columns: the Spark stage's
per-partition step (`quotaplane.backlog.spark.evaluate`).

spec: Backlog Quota Eviction in the Broker; the rules are the reference engine's
(`quotaplane.backlog.engine.evaluate`, `checks`, `eviction`, `oldest`, `stats`), applied here to
arrays. The rows (every snapshot of the topics, `_reason` set by the reader's row rules) are sorted
by (topic, tick, subscription) in Arrow, so a topic, a tick of a topic and a subscription of a tick
are each a run of rows:

1. the group rules: a subscription seen twice at a tick quarantines its rows; rows of a tick that
   disagree on `partitioned_topic` quarantine the tick. The rest are the used rows;
2. per check (a tick of a topic with used rows): the subscription holding the topic backlog is the
   first of the tick's used rows in `oldest.oldest_key` order (one `lexsort`); its values, the
   quotas in force (the reference `resolve`, once per (topic, partitioned topic)), the size check,
   then the time check, the action;
3. per used row of a check with an eviction run: the size eviction (the first skip on the slowest
   cursor), or the time evictions (precise: every subscription older than the target; estimate: the
   slowest cursors while each is expired, so those ranked before the first one that is not);
4. per topic, the eviction counters (a running count of the runs) and the totals the stage collects.

The answer has the columns of `OUTPUT`: a row per check (`_rank1`), a row per evicted subscription
(`_ev_type`), and `_topic` on one row per topic. A topic without a check (its every row
quarantined) gets a row of its own for `_topic`, whose other columns are not read: they hold
placeholders. The columns of few values (policies, levels, the exceeded quota, the action, the
producers' effect, the eviction's type) are byte codes of the vocabularies of `CODED`: cheaper to
hand over and cache than strings.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from quotaplane.backlog.config import (
    CONSUMER_BACKLOG_EVICTION,
    RETENTION_POLICIES,
    BacklogPolicies,
)
from quotaplane.backlog.engine.checks import PRODUCER_EFFECT
from quotaplane.backlog.engine.eviction import REDUCTION_FACTOR
from quotaplane.backlog.engine.model import SIZE, TIME
from quotaplane.backlog.engine.resolve import resolve
from quotaplane.backlog.names import namespace_of
from quotaplane.core.javamath import double_to_int, double_to_long

REASON = "_reason"
INPUT = ("ts_ms", "topic", "subscription", "backlog_size_bytes", "backlog_entries",
         "oldest_unacked_publish_ts_ms", "oldest_unacked_ledger_close_ts_ms", "partitioned_topic", REASON)
CHECK = ("ts_ms", "topic", "namespace", "partitioned_topic", "topic_backlog_size_bytes",
         "topic_backlog_entries", "backlog_age_seconds", "oldest_subscription", "size_limit", "time_limit",
         "size_policy", "time_policy", "size_level", "time_level", "exceeded", "action", "producers",
         "eviction_run")
COUNTERS = ("size_evictions_total", "time_evictions_total")
EVICTION = ("_ev_type", "_ev_subscription", "_ev_entries", "_ev_bytes")
OUTPUT = (*CHECK, *COUNTERS, "_rank1", *EVICTION, "_topic")
# never null on a check's or an evicted subscription's row (a topic's own totals row holds
# placeholders in them, and nulls in the others)
NEVER_NULL = ("ts_ms", "topic", "namespace", "size_limit", "time_limit", "size_policy", "time_policy",
              "size_level", "time_level", "eviction_run", "_rank1")
LAST = ("ts_ms", "namespace", "partitioned_topic", "backlog_age_seconds", "backlog_size_bytes",
        "oldest_subscription", "size_limit", "time_limit")
TOTALS = ("read", "used", "ticks", "first_ts", "last", "max_age", "time_limit", "size_limit", "max_size",
          "size_exceeded", "time_exceeded", "size_evictions", "time_evictions", "producers_held",
          "producers_failed", "evicted_entries", "evicted_bytes")
# the answer's columns of few values are codes of these (null for none): `CODED` names each
# column's vocabulary, the stage turns them into strings when it writes the tables
POLICIES = RETENTION_POLICIES
LEVELS = ("topic", "namespace", "broker")
EXCEEDED = (SIZE, TIME)
EFFECTS = ("held", "failed")  # `checks.PRODUCER_EFFECT`
CODED = {"size_policy": POLICIES, "time_policy": POLICIES, "size_level": LEVELS, "time_level": LEVELS,
         "exceeded": EXCEEDED, "action": POLICIES, "producers": EFFECTS, "_ev_type": EXCEEDED}
_LONG_MIN = np.iinfo(np.int64).min
STRINGS = frozenset({"topic", "namespace", "partitioned_topic", "oldest_subscription", "_ev_subscription"})
LAST_TYPE = pa.struct([(n, pa.string() if n in STRINGS else pa.int64()) for n in LAST])
TOTALS_TYPE = pa.struct([(n, LAST_TYPE if n == "last" else pa.int64()) for n in TOTALS])
# the type of each column of the answer
OUTPUT_TYPES: dict[str, pa.DataType] = {
    n: (TOTALS_TYPE if n == "_topic" else pa.string() if n in STRINGS else pa.int8() if n in CODED
        else pa.bool_() if n in ("eviction_run", "_rank1") else pa.int64())
    for n in OUTPUT}


def _string(values: Sequence[str | None], codes: np.ndarray) -> pa.Array:
    """`values[code]` per code; a negative code is null."""
    return pa.array(values, pa.string()).take(pa.array(codes, mask=codes < 0))


def _code(codes: np.ndarray) -> pa.Array:
    """Codes as bytes; a negative code is null."""
    return pa.array(codes.astype(np.int8), pa.int8(), mask=codes < 0)


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, list[Any]]:
    """Dictionary codes (-1 for null) and the distinct values."""
    encoded = pc.dictionary_encode(column.combine_chunks())
    return pc.fill_null(encoded.indices, -1).to_numpy().astype(np.int64), encoded.dictionary.to_pylist()


def _ranks(names: list[str]) -> np.ndarray:
    """Each name's rank in code point order (UTF-8 byte order, as Spark orders strings)."""
    ranks = np.empty(len(names), np.int64)
    ranks[sorted(range(len(names)), key=names.__getitem__)] = np.arange(len(names))
    return ranks


def _longs(column: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The values (0 for null) and where they are set."""
    values = pc.fill_null(column, 0).to_numpy().astype(np.int64)
    return values, pc.is_valid(column).to_numpy(zero_copy_only=False)


def _starts(*keys: np.ndarray) -> np.ndarray:
    """Where a run of equal keys begins (the rows sorted by them)."""
    n = len(keys[0])
    new = np.zeros(n, bool)
    if n:
        new[0] = True
        for key in keys:
            new[1:] |= key[1:] != key[:-1]
    return new


class _Checks:
    """Steps 1 and 2 of the module doc over the rows that passed the row rules (in any order: they
    are sorted here)."""

    def __init__(self, rows: pa.Table, policies: BacklogPolicies) -> None:
        precise = policies.broker.precise_time_check
        topic, self.topic_names = _codes(rows["topic"])
        subscription, self.subscription_names = _codes(rows["subscription"])
        parent, self.parent_names = _codes(rows["partitioned_topic"])
        ts = rows["ts_ms"].to_numpy().astype(np.int64)
        # sorted by (topic, tick, subscription) as codes: the names are sorted once each
        order = np.lexsort((_ranks(self.subscription_names)[subscription], ts,
                            _ranks(self.topic_names)[topic]))
        topic, ts, parent, subscription = topic[order], ts[order], parent[order], subscription[order]
        new_tick = _starts(topic, ts)
        sub_run = np.cumsum(_starts(topic, ts, subscription)) - 1
        duplicate = np.bincount(sub_run)[sub_run] > 1
        tick = np.cumsum(new_tick) - 1
        starts = np.flatnonzero(new_tick)
        conflict = (_runs(starts, parent, np.minimum) != _runs(starts, parent, np.maximum))[tick]
        used_row = ~duplicate & ~conflict
        self.used_per_topic = np.bincount(topic, weights=used_row,
                                          minlength=len(self.topic_names)).astype(np.int64)

        # from here on, every per-row array holds the used rows only, and their checks (a tick of
        # a topic with used rows) are runs of them
        r = np.flatnonzero(used_row)
        self.ts, self.subscription = ts[r], subscription[r]
        first = _starts(tick[r])
        self.starts = np.flatnonzero(first)
        self.check = np.cumsum(first) - 1
        used = order[r]  # the used rows as `rows` has them
        size = rows["backlog_size_bytes"].to_numpy().astype(np.int64)[used]
        entries = rows["backlog_entries"].to_numpy().astype(np.int64)[used]
        publish, has_publish = _longs(rows["oldest_unacked_publish_ts_ms"])
        close, has_close = _longs(rows["oldest_unacked_ledger_close_ts_ms"])
        self.size, self.entries = size, entries
        self.publish, self.has_publish = publish[used], has_publish[used]
        self.close, self.has_close = close[used], has_close[used]
        # the slowest cursor first (`oldest.oldest_key`; no backlog last); within a tick the rows are
        # in subscription order, and `lexsort` is stable, so a row's position breaks the last tie
        order = np.lexsort((-size, self.publish, ~self.has_publish, self.check))
        self.slowest_rank = np.empty(len(r), np.int64)
        self.slowest_rank[order] = np.arange(len(r)) - self.starts[self.check[order]]
        o = order[self.starts]  # each check's oldest subscription (a row of `r`)
        self.oldest = o

        s = self.starts
        self.ts_c, self.topic_c, self.parent_c = self.ts[s], topic[r][s], parent[r][s]
        has = self.has_publish[o]
        self.has_oldest = has
        self.size_c = np.where(has, size[o], 0)
        self.entries_c = np.where(has, entries[o], 0)
        if precise:
            self.base, self.has_base = self.publish[o], has
        else:
            self.base, self.has_base = self.close[o], has & self.has_close[o] & (self.close[o] > 0)
        elapsed = self.ts_c - self.base
        whole = np.abs(elapsed) // 1000
        self.age = np.where(elapsed >= 0, whole, -whole)  # toward zero, like Java's `toSeconds`
        quotas = self._quotas(policies)
        self.size_limit, self.time_limit = quotas["size_limit"], quotas["time_limit"]
        self.size_policy, self.time_policy = quotas["size_policy"], quotas["time_policy"]
        self.size_level, self.time_level = quotas["size_level"], quotas["time_level"]
        self.namespace = quotas["namespace"]
        size_exceeded = (self.size_limit >= 0) & (self.size_c >= self.size_limit)
        time_exceeded = ((self.time_limit > 0) & self.has_base
                         & (self.ts_c > self.base + self.time_limit * 1000))
        self.exceeded = np.where(size_exceeded, 1, np.where(time_exceeded, 2, 0))
        self.action = np.where(self.exceeded == 1, self.size_policy,
                               np.where(self.exceeded == 2, self.time_policy, -1))
        self.run = self.action == POLICIES.index(CONSUMER_BACKLOG_EVICTION)
        self.size_run, self.time_run = self.run & (self.exceeded == 1), self.run & (self.exceeded == 2)
        # each topic's first check, and each check's topic (a run of the topic's checks)
        new_topic = _starts(self.topic_c)
        self.topic_starts, self.topic_of_check = np.flatnonzero(new_topic), np.cumsum(new_topic) - 1
        # what the action does to the producers: 0 held, 1 failed, -1 nothing
        effect = [EFFECTS.index(PRODUCER_EFFECT[p]) if p in PRODUCER_EFFECT else -1 for p in POLICIES]
        self.effect = np.array([*effect, -1])[self.action]

    def _quotas(self, policies: BacklogPolicies) -> dict[str, np.ndarray]:
        """The quotas in force per check (limits, and codes of `CODED` and of `namespaces`), resolved
        once per (topic, partitioned topic)."""
        width = len(self.parent_names) + 1
        keys, which = np.unique(self.topic_c * width + self.parent_c + 1, return_inverse=True)
        namespaces: dict[str, int] = {}
        columns: dict[str, list[int]] = {k: [] for k in ("size_limit", "time_limit", "size_policy",
                                                          "time_policy", "size_level", "time_level",
                                                          "namespace")}
        for key in keys.tolist():
            topic, parent = self.topic_names[key // width], key % width - 1
            q = resolve(policies, topic, None if parent < 0 else self.parent_names[parent])
            columns["size_limit"].append(q.size_limit)
            columns["time_limit"].append(q.time_limit)
            for name in ("size_policy", "time_policy", "size_level", "time_level"):
                columns[name].append(CODED[name].index(getattr(q, name)))
            columns["namespace"].append(namespaces.setdefault(namespace_of(topic), len(namespaces)))
        self.namespaces = list(namespaces)
        return {name: np.array(values, np.int64)[which] for name, values in columns.items()}


def _evictions(c: _Checks, precise: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Step 3 per used row: the eviction's type code (0 none, 1 size, 2 time), entries and bytes."""
    check = c.check
    target = double_to_long.array(REDUCTION_FACTOR * c.size_limit.astype(np.float64))
    above = c.size_run & (c.size_c > target)
    skip = np.zeros(len(above), np.int64)
    skip[above] = double_to_int.array((c.size_c[above] - target[above]).astype(np.float64)
                                      * c.entries_c[above].astype(np.float64)
                                      / c.size_c[above].astype(np.float64))
    by_size = above & (skip > 0)

    time_limit, ts = c.time_limit[check], c.ts
    if precise:
        target_ms = double_to_long.array(REDUCTION_FACTOR * time_limit.astype(np.float64)) * 1000
        cutoff = ts - target_ms
        hit = c.has_publish & (ts > c.publish + target_ms)
    else:
        cutoff = ts - time_limit * 1000
        expired = c.has_publish & c.has_close & (c.close > 0) & (ts - c.close > time_limit * 1000)
        # the slowest cursors before the first one that is not expired
        stop = _runs(c.starts, np.where(expired, len(check), c.slowest_rank), np.minimum)
        hit = expired & (c.slowest_rank < stop[check])
    by_time = c.time_run[check] & hit
    # the share of the backlog published before the cutoff (`eviction.older_than`)
    moved = by_time & (cutoff > c.publish)
    fraction = ((cutoff[moved] - c.publish[moved]).astype(np.float64)
                / (ts[moved] - c.publish[moved]).astype(np.float64))
    kind = np.where(by_time, 2, 0)
    entries = np.zeros(len(check), np.int64)
    moved_bytes = np.zeros(len(check), np.int64)
    entries[moved] = double_to_int.array(fraction * c.entries[moved].astype(np.float64))
    moved_bytes[moved] = double_to_long.array(fraction * c.size[moved].astype(np.float64))
    oldest = c.oldest[by_size]
    kind[oldest] = 1
    entries[oldest] = skip[by_size]
    moved_bytes[oldest] = c.size_c[by_size] - target[by_size]
    return kind, entries, moved_bytes


def _runs(starts: np.ndarray, values: np.ndarray, reduce: np.ufunc) -> np.ndarray:
    """`reduce` over each run of `values` that `starts` begin (a topic's checks, a tick's rows)."""
    return reduce.reduceat(values, starts) if len(starts) else np.zeros(0, values.dtype)


def decide(table: pa.Table, policies: BacklogPolicies) -> pa.Table:
    """The rows of one partition (whole topics; `INPUT` columns) -> the `OUTPUT` columns (module doc)."""
    c = _Checks(table.filter(pc.is_null(table[REASON])), policies)
    kind, ev_entries, ev_bytes = _evictions(c, policies.broker.precise_time_check)

    # the output rows: each check's row and each evicted row (used rows), in order
    is_oldest = np.zeros(len(c.ts), bool)
    is_oldest[c.oldest] = True
    out = np.flatnonzero(is_oldest | (kind > 0))
    k = c.check[out]
    oldest = np.where(c.has_oldest, c.subscription[c.oldest], -1)  # per check
    # the eviction counters: each topic's eviction runs so far, per type
    counters = []
    for run in (c.size_run, c.time_run):
        so_far = np.cumsum(run)
        counters.append(so_far - (so_far - run)[c.topic_starts][c.topic_of_check])
    evicted = np.where(kind[out] == 1, oldest[k], np.where(kind[out] == 2, c.subscription[out], -1))
    columns: dict[str, pa.Array] = {
        "ts_ms": pa.array(c.ts_c[k], pa.int64()),
        "topic": _string(c.topic_names, c.topic_c[k]),
        "namespace": _string(c.namespaces, c.namespace[k]),
        "partitioned_topic": _string(c.parent_names, c.parent_c[k]),
        "topic_backlog_size_bytes": pa.array(c.size_c[k], pa.int64()),
        "topic_backlog_entries": pa.array(c.entries_c[k], pa.int64()),
        "backlog_age_seconds": pa.array(c.age[k], pa.int64(), mask=~c.has_base[k]),
        "oldest_subscription": _string(c.subscription_names, oldest[k]),
        "size_limit": pa.array(c.size_limit[k], pa.int64()),
        "time_limit": pa.array(c.time_limit[k], pa.int64()),
        "size_policy": _code(c.size_policy[k]),
        "time_policy": _code(c.time_policy[k]),
        "size_level": _code(c.size_level[k]),
        "time_level": _code(c.time_level[k]),
        "exceeded": _code(c.exceeded[k] - 1),
        "action": _code(c.action[k]),
        "producers": _code(c.effect[k]),
        "eviction_run": pa.array(c.run[k], pa.bool_()),
        "size_evictions_total": pa.array(counters[0][k], pa.int64()),
        "time_evictions_total": pa.array(counters[1][k], pa.int64()),
        "_rank1": pa.array(is_oldest[out], pa.bool_()),
        "_ev_type": _code(kind[out] - 1),
        "_ev_subscription": _string(c.subscription_names, evicted),
        "_ev_entries": pa.array(ev_entries[out], pa.int64(), mask=kind[out] == 0),
        "_ev_bytes": pa.array(ev_bytes[out], pa.int64(), mask=kind[out] == 0),
    }
    totals, carriers, alone = _totals(table, c, oldest, out, kind, ev_entries, ev_bytes)
    carried = np.full(len(out), -1, np.int64)
    carried[carriers] = np.arange(len(carriers))
    columns["_topic"] = totals.take(pa.array(carried, mask=carried < 0))
    checked = pa.table(columns, schema=pa.schema(OUTPUT_TYPES.items()))
    if not alone:
        return checked
    return pa.concat_tables([checked, _alone_rows(checked.schema, totals, alone)])


def _totals(table: pa.Table, c: _Checks, oldest: np.ndarray, out: np.ndarray, kind: np.ndarray,
            ev_entries: np.ndarray, ev_bytes: np.ndarray) -> tuple[pa.StructArray, np.ndarray, list[Any]]:
    """Step 4's totals: one struct per topic, the checked topics first (in order), then the others
    (their every row quarantined); the output row that carries each checked topic's (its first),
    and the other topics' names."""
    read = table.group_by("topic").aggregate([("topic", "count", pc.CountOptions(mode="all"))])
    read_of = dict(zip(read["topic"].to_pylist(), read["topic_count"].to_pylist(), strict=True))
    starts = c.topic_starts
    last = np.r_[starts[1:], len(c.topic_c)][:len(starts)] - 1  # each topic's last check
    out_topic = c.topic_c[c.check[out]]
    evicted = kind[out] > 0
    evicted_sums = {}
    for name, values in (("evicted_entries", ev_entries), ("evicted_bytes", ev_bytes)):
        per = np.zeros(len(c.topic_names), np.int64)
        np.add.at(per, out_topic[evicted], values[out][evicted])
        evicted_sums[name] = per
    has_eviction = np.zeros(len(c.topic_names), bool)
    has_eviction[out_topic[evicted]] = True

    def count(mask: np.ndarray) -> np.ndarray:
        return _runs(starts, mask.astype(np.int64), np.add)

    per_topic = {
        "ticks": np.diff(np.r_[starts, len(c.topic_c)]),
        "first_ts": c.ts_c[starts],
        "max_age": _runs(starts, np.where(c.has_base, c.age, _LONG_MIN), np.maximum),
        "time_limit": _runs(starts, c.time_limit, np.maximum),
        "size_limit": _runs(starts, c.size_limit, np.maximum),
        "max_size": _runs(starts, c.size_c, np.maximum),
        "size_exceeded": count(c.exceeded == 1), "time_exceeded": count(c.exceeded == 2),
        "size_evictions": count(c.size_run), "time_evictions": count(c.time_run),
        "producers_held": count(c.effect == 0), "producers_failed": count(c.effect == 1),
    }
    has_age = _runs(starts, c.has_base, np.logical_or)
    rows: list[dict[str, Any]] = []
    for i, (t, j) in enumerate(zip(c.topic_c[starts].tolist(), last.tolist(), strict=True)):
        row: dict[str, Any] = {key: int(values[i]) for key, values in per_topic.items()}
        row["max_age"] = row["max_age"] if has_age[i] else None
        row["read"], row["used"] = read_of[c.topic_names[t]], int(c.used_per_topic[t])
        for name, per in evicted_sums.items():
            row[name] = int(per[t]) if has_eviction[t] else None
        row["last"] = {"ts_ms": int(c.ts_c[j]), "namespace": c.namespaces[c.namespace[j]],
                       "partitioned_topic": None if c.parent_c[j] < 0 else c.parent_names[c.parent_c[j]],
                       "backlog_age_seconds": int(c.age[j]) if c.has_base[j] else None,
                       "backlog_size_bytes": int(c.size_c[j]),
                       "oldest_subscription": c.subscription_names[oldest[j]] if oldest[j] >= 0 else None,
                       "size_limit": int(c.size_limit[j]), "time_limit": int(c.time_limit[j])}
        rows.append(row)
    checked = {c.topic_names[t] for t in c.topic_c[starts].tolist()}
    alone = [name for name in read_of if name not in checked]
    # such a topic has no used row: a used row makes its tick a check
    rows += [{"read": read_of[name], "used": 0, "ticks": 0, "size_exceeded": 0,
              "time_exceeded": 0, "size_evictions": 0, "time_evictions": 0, "producers_held": 0,
              "producers_failed": 0} for name in alone]
    return pa.array(rows, TOTALS_TYPE), np.flatnonzero(_starts(out_topic)), alone


def _alone_rows(schema: pa.Schema, totals: pa.StructArray, alone: list[Any]) -> pa.Table:
    """A row per topic without a check (the last `len(alone)` of `totals`), carrying its totals;
    placeholders in the `NEVER_NULL` columns, nulls in the others."""
    n = len(alone)
    columns = []
    for field in schema:
        if field.name == "topic":
            columns.append(pa.array(alone, field.type))
        elif field.name == "_topic":
            columns.append(totals.slice(len(totals) - n))
        elif field.name not in NEVER_NULL:
            columns.append(pa.nulls(n, field.type))
        elif pa.types.is_boolean(field.type):
            columns.append(pa.array([False] * n, field.type))
        elif pa.types.is_integer(field.type):
            columns.append(pa.array([0] * n, field.type))
        else:
            columns.append(pa.array([""] * n, field.type))
    return pa.table(columns, schema=schema)
