"""The reference engine of Pulsar backlog quotas and their telemetry (spec: PIP-323).

Pure Python, no Spark: one check tick of one topic at a time (`evaluate`), the topic stats and
metrics values derived from the ticks (`stats`). The Spark pipeline must agree with it exactly.
"""
