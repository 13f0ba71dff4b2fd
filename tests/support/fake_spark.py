"""A stand-in for a SparkSession where a test needs only its runtime configuration (the runner's
choice of interpreted expressions) and no Spark."""

from __future__ import annotations


class FakeConf:
    """`spark.conf` as the runner and the session's helpers use it: `get`, and `set`."""

    def __init__(self, **settings: str) -> None:
        self.settings = dict(settings)

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.settings.get(key, default)

    def set(self, key: str, value: str) -> None:
        self.settings[key] = value


class FakeSpark:
    def __init__(self, **settings: str) -> None:
        self.conf = FakeConf(**settings)
