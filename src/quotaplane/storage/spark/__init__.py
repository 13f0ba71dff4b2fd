"""Storage volume quotas in Spark: rounds, per-volume limits, decisions per source, the `run` stage.

`storage_decisions(config, volumes, membership, errors)` gives the same rows as the reference
engine's `evaluate_rounds` (checked by the differential tests in tests/pipeline/storage/).
"""
