"""The service's HTTP endpoints: `/metrics` (Prometheus text), `/healthz`, `/decision` and
`/forecast` (JSON).

`/healthz` is 200 while the last round is younger than three intervals (or no round is due yet),
503 otherwise; `/decision` is the last decision row (the columns of the `storage_decisions` table)
with `round`, the round's number as its log line gives it (`poll_id` is the collection's, which a
replay takes from the recording);
`/forecast` the last round's volume forecasts, a JSON list of `VolumeForecast.as_dict()` (the lines
`quotaplane forecast` prints), `[]` before the first round.
"""

from __future__ import annotations

import json
import threading
import time

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from quotaplane.core.http import EndpointServer
from quotaplane.live.metrics import LiveStatus


class Endpoints(EndpointServer):
    def __init__(self, host: str, port: int, registry: CollectorRegistry, status: LiveStatus,
                 interval_s: float, lock: threading.Lock) -> None:
        super().__init__(host, port)
        self.registry, self.status, self.interval_s, self.lock = registry, status, interval_s, lock
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
        if path == "/decision":
            with self.lock:
                row = self.status.decision_row
                answer = None if row is None else {**row, "round": self.status.round}
            return 200, "application/json", (json.dumps(answer, sort_keys=True) + "\n").encode()
        if path == "/forecast":
            with self.lock:
                rows = [f.as_dict() for f in self.status.forecasts]
            return 200, "application/json", (json.dumps(rows, sort_keys=True) + "\n").encode()
        return 404, "text/plain; charset=utf-8", b"not found: /metrics, /healthz, /decision, /forecast\n"
