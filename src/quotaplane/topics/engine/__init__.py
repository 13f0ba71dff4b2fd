"""Topic bytes-in quotas, the pure-Python reference engine (spec: kafka-topic-bytes-in-quota).

`meter` (the Yammer one-minute rate in event time), `thresholds` (explicit and default-share
thresholds as of a time), `decision` (the drop rule), `evaluate` (requests judged one at a time),
`kernel` (the same judgement for one broker's requests as numpy arrays, used by the Spark stage),
`intervals` (per topic and interval totals, the dropped-request log), `requests` (JSON Lines input).
"""
