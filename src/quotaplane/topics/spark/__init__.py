"""Topic bytes-in quotas on Spark (spec: kafka-topic-bytes-in-quota).

`thresholds` (thresholds as of each request, column expressions), `kernel` (one broker's meters and
decisions with numpy), `evaluate` (the per-broker `applyInPandas` stage), `aggregates` (per topic and
interval totals, the dropped-request log), `job` (the `quotaplane run` stage).
"""
