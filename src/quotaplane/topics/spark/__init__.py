"""Topic bytes-in quotas on Spark (spec: kafka-topic-bytes-in-quota).

`evaluate` (the per-broker Arrow groups around the numpy thresholds
`quotaplane.topics.engine.broker_thresholds` and kernel `quotaplane.topics.engine.kernel`),
`intervals` (per topic and interval totals, the dropped-request log), `report_data` (the summary's
and report's aggregates), `stage` (the `quotaplane run` stage).
"""
