"""The machine a benchmark ran on: cores, memory, CPU model, load, and the software versions."""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _memory_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def load_average() -> list[float] | None:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return None


def describe(spark: Any | None = None) -> dict[str, Any]:
    """Cores, memory, CPU model, OS, load average, and Python, Java, Spark and library versions
    (Java as the Spark JVM reports it)."""
    import numpy
    import pandas
    import pyarrow
    import pyspark

    java = None
    if spark is not None:
        try:
            jvm = spark.sparkContext._jvm
            java = f"{jvm.System.getProperty('java.vendor')} {jvm.System.getProperty('java.version')}"
        except Exception:  # Spark Connect has no local JVM
            java = None
    return {
        "cores": os.cpu_count(),
        "memory_bytes": _memory_bytes(),
        "cpu_model": _cpu_model(),
        "os": f"{platform.system()} {platform.release()}",
        "load_average": load_average(),
        "python": platform.python_version(),
        "java": java,
        "spark": spark.version if spark is not None else pyspark.__version__,
        "pyspark": pyspark.__version__,
        "pyarrow": pyarrow.__version__,
        "pandas": pandas.__version__,
        "numpy": numpy.__version__,
    }
