"""Topic bytes-in quotas on Spark (spec: kafka-topic-bytes-in-quota).

`thresholds` (thresholds as of each request, column expressions over the schedule of
`quotaplane.topics.engine.thresholds`), `evaluate` (the per-broker `applyInPandas` stage around the
numpy kernel `quotaplane.topics.engine.kernel`), `intervals` (per topic and interval totals, the
dropped-request log), `report_data` (the report's aggregates), `stage` (the `quotaplane run` stage).
"""
