"""Metrics in Prometheus exposition format, named as the specs name them."""
