"""A deterministic simulator of cluster telemetry (storage, client and topic requests, backlogs).

`quotaplane.sim.run.simulate(scenario, out, overrides)` writes a telemetry directory; `generate`
yields chunks; the scenarios are in `quotaplane.sim.scenarios`. See docs/simulator.md.
"""
