"""Kafka client quotas in Spark: per-request throttle decisions and per-interval standing."""
