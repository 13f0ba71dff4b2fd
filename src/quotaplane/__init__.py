"""quotaplane: a quota control plane for Kafka and Pulsar.

Pure-Python reference policy engines (`quotaplane.policies`) and a Spark pipeline
(`quotaplane.pipeline`) that evaluates the same policies over fleets and months of telemetry.
"""

__version__ = "0.1.0"
