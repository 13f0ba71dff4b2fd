"""The notices reference engine: pure Python, no pyspark (docs/notices.md)."""
