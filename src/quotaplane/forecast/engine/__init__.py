"""The forecast's reference engine: pure Python, no Spark (docs/forecast.md).

`trend` fits one series; `replicas` the growth of each partition replica (retention- and
replication-aware); `volumes` the time until each volume's soft limit, hard limit and full;
`backlog` the time until each Pulsar topic's backlog quota.
"""
