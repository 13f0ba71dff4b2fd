"""Kafka client quotas, the reference engine (pure Python, no Spark).

Modules: `quota_types` (the four types and their keys), `entities` (entities and the precedence
levels), `resolution` (metric tags and limits, Kafka's default callback), `sampled_rate` and
`token_bucket` (Kafka's stats), `javamath` (Math.round and the throttle formulas), `settings`,
`storage_factor` (the storage throttle factor in force), `engine` (requests one at a time) and
`intervals` (per-interval rows and per-client standing).
"""
