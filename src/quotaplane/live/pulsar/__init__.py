"""Pulsar's side of the live service: the admin REST API read for backlog telemetry (PIP-323).

- `admin`: a REST client over the standard library (`urllib`) whose calls answer a value or a
  `PulsarError` (one-line reason), never an exception;
- `answers`: the admin API's JSON answers (topic stats, internal stats, backlog quota maps, the broker's
  runtime configuration) checked and turned into the values of `model`;
- `collect`: one collection round over the watched namespaces (`PulsarCollector.collect`);
- `rows`: a round as `backlog_snapshots` rows (docs/telemetry.md) and the backlog policies it implies
  (docs/backlog.md), pure functions.

See docs/pulsar-live.md.
"""
