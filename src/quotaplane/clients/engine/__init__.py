"""Kafka client quotas, the reference engine (pure Python, no Spark).

Modules: `quota_types` (the four types and their keys), `entities` (entities and the precedence
levels), `resolution` (metric tags and limits, Kafka's default callback), `sampled_rate` and
`token_bucket` (Kafka's stats), `settings`, `storage_factor` (the storage throttle factor in force),
`evaluate` (requests one at a time), `kernels` (the same rules per sharing group as numpy arrays,
used by the Spark stage) and `intervals` (per-interval rows and per-client standing). Java's
numerics (`Math.round`, the throttle formulas) are in `quotaplane.core.javamath`.
"""
