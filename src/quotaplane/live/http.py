"""The service's HTTP endpoints: `/metrics` (Prometheus text), `/healthz`, and one JSON document per
live policy (`/decision`: the last storage decision row, the columns of the `storage_decisions`
table, with `round`, the round's number as its log line gives it (`poll_id` is the collection's,
which a replay takes from the recording); `/forecast`: the last round's volume forecasts,
`VolumeForecast.as_dict()` as `quotaplane forecast` prints them; ...), each `null` or `[]` before
the first round.

`/healthz` is 200 while the last round is younger than three intervals (or no round is due yet),
503 otherwise.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from quotaplane.core.http import EndpointServer
from quotaplane.live.metrics import LiveStatus


class Endpoints(EndpointServer):
    def __init__(self, host: str, port: int, registry: CollectorRegistry, status: LiveStatus,
                 interval_s: float, lock: threading.Lock, empty: Mapping[str, object] | None = None) -> None:
        super().__init__(host, port)
        self.registry, self.status, self.interval_s, self.lock = registry, status, interval_s, lock
        self.empty = dict(empty or {})  # each document path and what it serves before the first round
        self.started = time.time()

    def answer(self, path: str) -> tuple[int, str, bytes]:
        if path == "/metrics":
            with self.lock:
                return 200, CONTENT_TYPE_LATEST, generate_latest(self.registry)
        if path == "/healthz":
            with self.lock:
                last = self.status.last_round_unix
            since = time.time() - (last if last is not None else self.started)
            healthy = since <= 3 * max(self.interval_s, 1.0)
            text = f"{'ok' if healthy else 'stale'}: last round {since:.1f}s ago\n"
            return (200 if healthy else 503), "text/plain; charset=utf-8", text.encode()
        if path in self.empty:
            with self.lock:
                document = self.status.documents.get(path, self.empty[path])
            return 200, "application/json", (json.dumps(document, sort_keys=True) + "\n").encode()
        paths = ", ".join(["/metrics", "/healthz", *sorted(self.empty)])
        return 404, "text/plain; charset=utf-8", f"not found: {paths}\n".encode()
