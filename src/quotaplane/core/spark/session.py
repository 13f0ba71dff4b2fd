"""Building the SparkSession: embedded `local[*]` by default, any master or Spark Connect URL."""

from __future__ import annotations

import atexit
import os
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from quotaplane.core.spark.class_archive import sharing_options

LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")

CODEGEN_CACHE = "spark.sql.codegen.cache.maxEntries"

# Settings that make a small, deterministic, quiet embedded Spark. Every value can be overridden
# with `extra_conf` (or spark-submit --conf on a real cluster).
DEFAULT_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.adaptive.enabled": "true",
    # tables partitioned by a prefix of a join's keys (the storage rounds) are joined in place
    "spark.sql.requireAllClusterKeysForCoPartition": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    # a stage caches rows only for the few steps of one run: compressing them costs more CPU than
    # reading them back saves (storage's keyed rows: docs/performance.md)
    "spark.sql.inMemoryColumnarStorage.compressed": "false",
    # PySpark otherwise records the Python call site of every Column function for Spark's error
    # context: several py4j round trips each, about 2 s of the bundled example (docs/performance.md)
    "spark.python.sql.dataFrameDebugging.enabled": "false",
    # the classes generated for a session's plans stay compiled: Spark keeps 100, as many as one
    # round of the storage stage with its benchmark jobs compiles, so a plan run again after others
    # had its classes compiled again and run cold: 30-72 of storage's in each later round of the
    # benchmark (docs/performance.md, "Generated classes kept for the session")
    CODEGEN_CACHE: "1000",
    "spark.driver.extraJavaOptions": f"-Dlog4j.configurationFile={LOG4J_CONFIG.as_uri()}",
    "spark.executor.extraJavaOptions": f"-Dlog4j.configurationFile={LOG4J_CONFIG.as_uri()}",
}

# Spark splits a file scan into about one task per task slot, counting 4 MB for opening each file
# (`spark.sql.files.openCostInBytes`): a file of three Parquet row groups was read as one task of two
# row groups beside one of the third, a core idle while the first finished. Several splits per slot
# let the tasks even out; a split stays at least `openCostInBytes` (docs/performance.md,
# "Scans split finer, the topic groups unmerged, the topic kernel's setup").
MIN_FILE_SPLITS = "spark.sql.files.minPartitionNum"
SPLITS_PER_SLOT = 4


def _use_this_interpreter() -> None:
    """Make Spark's Python workers run the interpreter that runs quotaplane (the venv's)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def build_session(
    master: str | None = None,
    remote: str | None = None,
    app_name: str = "quotaplane",
    extra_conf: dict[str, str] | None = None,
    driver_java_options: str | None = None,
) -> SparkSession:
    """Return a SparkSession for `master` (default `local[*]`) or a Spark Connect `remote`.

    Exactly one of `master`/`remote` may be given. With `remote` (``sc://host:port``) the
    session is a Spark Connect client and no local JVM is started. `driver_java_options` are added
    to the Java options of the driver JVM this call starts (none with `remote` or spark-submit).
    """
    if master and remote:
        raise ValueError("give either a Spark master URL or a Spark Connect URL, not both")
    _use_this_interpreter()
    conf = {**DEFAULT_CONF, **(extra_conf or {})}
    if remote:
        builder = SparkSession.builder.remote(remote).appName(app_name)
        for key in ("spark.sql.session.timeZone", "spark.sql.shuffle.partitions",
                    "spark.sql.requireAllClusterKeysForCoPartition"):
            builder = builder.config(key, conf[key])
        session = builder.getOrCreate()
        session.addArtifacts(str(package_zip()), pyfile=True)
        return session
    builder = SparkSession.builder.appName(app_name)
    if not launched_by_spark_submit():
        builder = builder.master(master or "local[*]")
        # the JVM this session starts maps the class archive, with the caller's options
        added = " ".join(o for o in (sharing_options(), driver_java_options) if o)
        if added:
            java_options = conf.get("spark.driver.extraJavaOptions", "")
            conf["spark.driver.extraJavaOptions"] = f"{java_options} {added}".strip()
    elif master:
        builder = builder.master(master)
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    split_scans(session)
    if not session.sparkContext.master.startswith("local"):
        session.sparkContext.addPyFile(str(package_zip()))
    return session


SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"


def shuffle_partitions(spark: Any) -> int:
    """The session's `spark.sql.shuffle.partitions` (Spark's default, 200, is set lower here)."""
    return int(spark.conf.get(SHUFFLE_PARTITIONS) or 8)


def task_slots(spark: Any) -> int | None:
    """The tasks a classic session's cluster runs at once (its default parallelism); None on Spark
    Connect, whose client does not see the cluster."""
    return spark.sparkContext.defaultParallelism if isinstance(spark, SparkSession) else None


def tasks_for(rows: int, rows_per_task: int, limit: int | None, slots: int | None = None,
              at_least: int = 1) -> int:
    """The tasks of a step over `rows` rows whose partitions adaptive execution does not merge: one
    per `rows_per_task` rows begun and at least `at_least`, more than one rounded up to a multiple
    of the cluster's task `slots` (when known) so that no core waits for a last task alone, at most
    `limit` (the shuffle partitions; None for a step whose task holds its rows at once, which the
    rows' count must set). A task past what the rows need costs its scheduling, its Python worker's
    round trip and its output file (docs/performance.md)."""
    tasks = max(at_least, -(-rows // rows_per_task))
    if tasks > 1 and slots is not None and slots > 1:
        tasks = -(-tasks // slots) * slots
    return tasks if limit is None else min(limit, tasks)


def slot_partitions(spark: Any) -> int:
    """The partitions of a shuffle whose output is cached: one per task slot, at most the shuffle
    partitions (all of them when the slots are unknown: Spark Connect). Adaptive execution merges
    none of a cached plan's partitions (`spark.sql.optimizer.canChangeCachedPlanOutputPartitioning`
    is off by default), and a task past the slots costs its scheduling and its Python worker's round trip
    (docs/performance.md, "The backlog's cached rows in one partition per core")."""
    limit, slots = shuffle_partitions(spark), task_slots(spark)
    return limit if slots is None else min(limit, slots)


def split_scans(spark: Any) -> None:
    """Have file scans split into `SPLITS_PER_SLOT` tasks per task slot at least, unless the session
    sets `spark.sql.files.minPartitionNum` itself (or does not see its cluster: Spark Connect)."""
    slots = task_slots(spark)
    if slots is not None and spark.conf.get(MIN_FILE_SPLITS, None) is None:
        spark.conf.set(MIN_FILE_SPLITS, str(SPLITS_PER_SLOT * slots))


@contextmanager
def partitions_for_slots(spark: Any) -> Iterator[int | None]:
    """Shuffles in no more partitions than the session runs tasks at once, while inside; the
    session's setting is restored after. For a small run: a partition past the task slots only adds
    a task, its scheduling and its shuffle files (docs/performance.md, "Stages side by side").
    Gives the partitions in force, None when unchanged (Spark Connect, whose client does not see
    the cluster, or a setting already as low)."""
    slots = slot_partitions(spark)
    if slots == shuffle_partitions(spark):
        yield None
        return
    current = spark.conf.get(SHUFFLE_PARTITIONS)
    spark.conf.set(SHUFFLE_PARTITIONS, str(slots))
    try:
        yield slots
    finally:
        spark.conf.set(SHUFFLE_PARTITIONS, current)


def launched_by_spark_submit() -> bool:
    """True when spark-submit started this interpreter (then its --master and --conf apply)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def package_zip() -> Path:
    """The `quotaplane` package as a zip, for executors that do not have it installed.

    Python functions that Spark runs on executors (pandas UDFs) import `quotaplane`; shipping the
    package with the job means any cluster with pyspark and its Python dependencies can run it.
    """
    package = Path(__file__).resolve().parents[2]
    target = Path(tempfile.gettempdir()) / f"quotaplane-{os.getpid()}.zip"
    atexit.register(target.unlink, missing_ok=True)  # executors fetch it while the job runs
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(package.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                zf.write(path, Path("quotaplane") / path.relative_to(package))
    return target
