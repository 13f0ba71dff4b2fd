"""Topic bytes-in quotas, the pure-Python reference engine (spec: kafka-topic-bytes-in-quota).

`meter` (the Yammer one-minute rate in event time), `thresholds` (explicit and default-share
thresholds as of a time), `decision` (the drop rule), `engine` (requests judged one at a time),
`intervals` (per topic and interval totals, the dropped-request log), `requests` (JSON Lines input).
"""

from quotaplane.policies.topics.engine import Decision, Evaluation, MeterSnapshot, TopicRequest, evaluate

__all__ = ["Decision", "Evaluation", "MeterSnapshot", "TopicRequest", "evaluate"]
