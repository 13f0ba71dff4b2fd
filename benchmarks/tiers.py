"""Benchmark tiers: fleets of growing width, simulated with the `fleet` scenario.

A tier fixes the width of the fleet (brokers, log dirs, clients, topics, Pulsar topics) and a base
time span. The scaling curve multiplies the time span: at scale k the storage kinds cover k times
the base days and the request, backlog and producer traffic kinds k times the base window, so every
input grows k-fold while the fleet stays the same (the scenario draws its Pulsar topics with the span
among its parameters, so their producers, and the `producer_traffic` rows, differ between scales).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

SCENARIO = "fleet"
SEED = 1


@dataclass(frozen=True)
class Tier:
    """One tier; `window_hours` None means the request and backlog kinds cover the whole span."""

    name: str
    brokers: int
    log_dirs: int
    clients: int
    topics: int
    pulsar_topics: int
    days: float
    interval_seconds: int
    window_hours: float | None
    requests_per_client_per_minute: float = 1.0
    doc: str = ""

    def overrides(self, scale: float = 1.0) -> dict[str, Any]:
        """The simulator parameters of this tier at `scale` times its base span."""
        return {
            "seed": SEED,
            "brokers": self.brokers,
            "log_dirs": self.log_dirs,
            "clients": self.clients,
            "topics": self.topics,
            "pulsar_topics": self.pulsar_topics,
            "days": self.days * scale,
            "interval_seconds": self.interval_seconds,
            "window_hours": None if self.window_hours is None else self.window_hours * scale,
            "requests_per_client_per_minute": self.requests_per_client_per_minute,
        }

    def describe(self) -> dict[str, Any]:
        """The tier as the results record it."""
        return {"name": self.name, "scenario": SCENARIO, "doc": self.doc,
                "volumes": self.brokers * self.log_dirs, **self.overrides(1.0)}

    def command(self) -> str:
        """The simulator command that writes this tier's base data."""
        o = self.overrides(1.0)
        parts = [f"quotaplane simulate --scenario {SCENARIO} --seed {SEED} --format parquet",
                 f"--brokers {o['brokers']} --log-dirs {o['log_dirs']} --clients {o['clients']}",
                 f"--topics {o['topics']} --pulsar-topics {o['pulsar_topics']} --days {o['days']:g}",
                 f"--interval-seconds {o['interval_seconds']}",
                 f"--requests-per-client-per-minute {o['requests_per_client_per_minute']:g}"]
        if o["window_hours"] is not None:
            parts.append(f"--window-hours {o['window_hours']:g}")
        return " ".join(parts)


S = Tier("S", brokers=6, log_dirs=2, clients=200, topics=60, pulsar_topics=8, days=1.0, interval_seconds=10,
         window_hours=None,
         doc="6 brokers x 2 log dirs, 200 client ids, 60 topics, 8 Pulsar topics; 1 day at 10 s, "
             "requests and backlog over the whole day")
M = Tier("M", brokers=50, log_dirs=4, clients=5000, topics=500, pulsar_topics=500, days=1.0,
         interval_seconds=10, window_hours=1.0,
         doc="50 brokers x 4 log dirs, 5,000 client ids, 500 topics, 500 Pulsar topics; storage 1 day at "
             "10 s, requests and backlog over its first hour (at 8x: 8 days and 8 hours)")
L = Tier("L", brokers=200, log_dirs=8, clients=20000, topics=2000, pulsar_topics=2000, days=7.0,
         interval_seconds=10, window_hours=24.0,
         doc="200 brokers x 8 log dirs, 20,000 client ids, 2,000 topics, 2,000 Pulsar topics; storage 7 days "
             "at 10 s, requests and backlog over one day (extrapolated unless run on a larger machine)")
# A few seconds of work per policy: the smoke run and the harness test.
QUICK = Tier("quick", brokers=3, log_dirs=1, clients=12, topics=6, pulsar_topics=2, days=1.0 / 24,
             interval_seconds=60, window_hours=0.25,
             doc="3 brokers x 1 log dir, 12 client ids, 6 topics, 2 Pulsar topics; 1 hour at 60 s, "
                 "requests and backlog over 15 minutes")

TIERS: dict[str, Tier] = {t.name: t for t in (S, M, L)}


def quick(tier: Tier) -> Tier:
    """The smoke-run stand-in of `tier` (its name kept, so results say which tier it stands for)."""
    return replace(QUICK, name=f"{tier.name}-quick")
