"""PIP-385 producer throttle notices on Spark (docs/notices.md).

`evaluate`: the notices of each broker in one `applyInPandas` group around the numpy kernel
`quotaplane.notices.engine.kernel` (`evaluate_brokers`), observed with the sums
each group makes of its notices (`observe_aggregates`); `aggregates`: those sums, added up in the
driver into the `notice_comparison` rows and the report's timeline.
"""
