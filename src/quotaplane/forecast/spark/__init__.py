"""The forecast as Spark transforms: the twins of `quotaplane.forecast.engine`, module for module."""
