"""A deterministic simulator of cluster telemetry (storage, client and topic requests, backlogs).

`simulate(scenario, out, overrides)` writes a telemetry directory; `generate` yields chunks.
See docs/simulator.md.
"""

from quotaplane.sim.params import SimParams
from quotaplane.sim.run import generate, resolve, simulate
from quotaplane.sim.scenarios import SCENARIOS

__all__ = ["SCENARIOS", "SimParams", "generate", "resolve", "simulate"]
