"""The Spark stage of Pulsar backlog quotas (PIP-323): `DataFrame -> DataFrame` transforms and `stage`."""
