"""The live control loop (`quotaplane serve`): collect from a running Kafka cluster (or replay
recorded telemetry), decide with the storage reference engine, enforce through Kafka's client quotas,
serve /metrics, and land every round's telemetry for the batch and streaming modes."""
