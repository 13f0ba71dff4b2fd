"""PIP-385 producer throttle notices on Spark (docs/notices.md).

`evaluate`: the notices of each broker in one `applyInPandas` group around the numpy kernel
`quotaplane.notices.engine.kernel` (`evaluate_notices`), and the `notice_comparison` aggregate
(`comparison`).
"""
