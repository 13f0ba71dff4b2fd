"""What the stream shows: a line per commit, and its metrics on `--metrics-port`.

Read from the commit log (so it works alike when the micro-batches run in a Spark Connect server)
and from the query's last progress. Metrics (docs/metrics.md, "Streaming"):

- `quotaplane_stream_commits_total`, `quotaplane_stream_watermark_seconds`,
  `quotaplane_stream_last_commit_seconds` (how long the last micro-batch took),
  `quotaplane_stream_rows_per_second` (rows read by the last micro-batch over its duration);
- `quotaplane_stream_input_rows_total{input, outcome}` (`read`, `used`, `quarantined`, `late`);
- `quotaplane_stream_decisions_total{table}`, `quotaplane_stream_decision_outcomes_total{table,
  column, value}` (who is throttled, why: the values of each table's outcome column),
  `quotaplane_stream_late_rows_total{policy}` (rows a policy found late for a unit it had decided);
- `quotaplane_stream_state_keys{policy}`;
- `quotaplane_stream_storage_throttle_factor{cluster, observing_broker_id}`: the storage decision
  in force after the last commit (the latest decisions);
- `quotaplane_stream_spark_input_files_per_second` and `..._processed_files_per_second` from the
  query's progress (its rows are files).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from quotaplane.stream.commits import Commit


class StreamStatus(Collector):
    def __init__(self, policies: list[str]) -> None:
        self.policies = policies
        self.lock = threading.Lock()
        self.commit = Commit.first()
        self.progress: dict[str, Any] = {}
        self.registry = CollectorRegistry()
        self.registry.register(self)

    def update(self, commit: Commit, progress: dict[str, Any] | None = None) -> None:
        with self.lock:
            self.commit = commit
            if progress:
                self.progress = dict(progress)

    def line(self, commit: Commit, final: bool = False) -> str:
        rate = commit.rows / commit.seconds if commit.seconds > 0 else 0.0
        decided = ", ".join(f"{t} +{n}" for t, n in sorted(commit.decided.items()) if n) or "nothing decided"
        keys = " ".join(f"{p}={n}" for p, n in sorted(commit.keys.items()))
        what = "flush" if final else f"batch {commit.number}"
        return (f"  {what}: {commit.rows} rows in {commit.seconds:.1f}s ({rate:,.0f} rows/s) · "
                f"watermark {commit.watermark_ms} · {decided} · state keys {keys or '-'}")

    def serve(self, host: str, port: int) -> Any:
        from quotaplane.stream.http import MetricsServer

        server = MetricsServer(host, port, self.registry, self.lock)
        server.start()
        return server

    def collect(self) -> Iterator[Metric]:
        c = self.commit
        yield _counter("quotaplane_stream_commits", "Commits of the stream (micro-batches and flushes).",
                       [([], c.number)])
        if c.watermark_ms is not None:
            yield _gauge("quotaplane_stream_watermark_seconds",
                         "The event-time watermark after the last commit (Unix seconds).",
                         [([], c.watermark_ms / 1000)])
        yield _gauge("quotaplane_stream_last_commit_seconds", "How long the last commit took.",
                     [([], c.seconds)])
        yield _gauge("quotaplane_stream_rows_per_second",
                     "Rows read by the last commit over its duration.",
                     [([], c.rows / c.seconds if c.seconds > 0 else 0.0)])
        inputs = [(k.split(":", 1), v) for k, v in c.totals.items()
                  if k.split(":", 1)[0] in ("read", "used", "quarantined", "late") and ":" in k]
        family = CounterMetricFamily("quotaplane_stream_input_rows", "Input rows by outcome.",
                                     labels=["input", "outcome"])
        for (outcome, name), value in sorted(inputs):
            family.add_metric([name, outcome], value)
        yield family
        yield _counter("quotaplane_stream_decisions", "Decision rows written, by table.",
                       [([t[len("table:"):]], v) for t, v in sorted(c.totals.items())
                        if t.startswith("table:")],
                       ["table"])
        outcomes = [(k.split(":", 3)[1:], v) for k, v in sorted(c.totals.items()) if k.startswith("outcome:")]
        yield _counter("quotaplane_stream_decision_outcomes",
                       "Decision rows by the value of their outcome column (a topic's decision, whether a "
                       "client request was throttled, the backlog quota exceeded, the storage fallback).",
                       [(labels, v) for labels, v in outcomes], ["table", "column", "value"])
        yield _counter("quotaplane_stream_late_rows",
                       "Rows a policy set aside as late: the unit they belong to was decided already.",
                       [([p], c.totals.get(f"policy_late:{p}", 0)) for p in self.policies], ["policy"])
        yield _gauge("quotaplane_stream_state_keys", "Keys in each policy's state after the last commit.",
                     [([p], c.keys.get(p, 0)) for p in self.policies], ["policy"])
        yield _gauge("quotaplane_stream_storage_throttle_factor",
                     "The storage throttle factor in force after the last commit.",
                     [([str(r.get("cluster") or ""), "" if r.get("observing_broker_id") is None
                       else str(r["observing_broker_id"])], r["throttle_factor"]) for r in c.in_force],
                     ["cluster", "observing_broker_id"])
        for key, name in (("inputRowsPerSecond", "input"), ("processedRowsPerSecond", "processed")):
            value = self.progress.get(key)
            if isinstance(value, int | float):
                yield _gauge(f"quotaplane_stream_spark_{name}_files_per_second",
                             f"Files per second the query {name} (its last progress).", [([], float(value))])


def _family(kind: type[GaugeMetricFamily] | type[CounterMetricFamily], name: str, doc: str,
            samples: list[tuple[list[str], float]], labels: list[str] | None) -> Metric:
    family = kind(name, doc, labels=labels or [])
    for values, value in samples:
        family.add_metric(values, value)
    return family


def _gauge(name: str, doc: str, samples: list[tuple[list[str], float]], labels: list[str] | None = None
           ) -> Metric:
    return _family(GaugeMetricFamily, name, doc, samples, labels)


def _counter(name: str, doc: str, samples: list[tuple[list[str], float]], labels: list[str] | None = None
             ) -> Metric:
    return _family(CounterMetricFamily, name, doc, samples, labels)
