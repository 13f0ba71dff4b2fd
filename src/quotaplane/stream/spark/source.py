"""The landing directory as a Structured Streaming source of checked lines.

Each input is a folder of the landing (`<landing>/<input>/`, the layout of docs/telemetry.md) read
with Spark's file source as whole texts (`wholetext`): a file is one row, split into its lines
here, so each line's place in its file is known (`_position`, and `_file` a hash of its path), as
the batch reader knows it. On a classic session the lines are spread over the cluster's task
slots (`checked_lines`). Every line is then parsed and checked with the batch reader's rules
(`quotaplane.core.spark.readers.json_lines` and `validate`), once, in the streaming query's plan:
each micro-batch gets rows with `input`, `key` (the policy's key as JSON), `event_ms`, `reason`
(why the line is quarantined, or null), `row` (the typed row as JSON, with `_file` and
`_position`) and `original` (the line).

Files whose names start with `.` or `_` are not read (the live service writes a round under such a
name and renames it when whole). A folder that does not exist yet is created, empty: the stream
picks up its files when they come.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from quotaplane.core.policy import Input
from quotaplane.core.spark.readers import FILE_ID, POSITION, REASON, json_lines, validate
from quotaplane.core.spark.session import task_slots
from quotaplane.stream.plan import Streamed

_JSON = {"ignoreNullFields": "false"}


def landing_rows(spark: SparkSession, landing: Path, streamed: list[Streamed],
                 max_files_per_trigger: int | None = None) -> DataFrame:
    """The checked lines of every input of the streamed policies, as one streaming frame."""
    parts = []
    slots = task_slots(spark)
    for policy in streamed:
        for item in policy.inputs:
            folder = landing / item.name
            folder.mkdir(parents=True, exist_ok=True)
            reader = spark.readStream.format("text").option("wholetext", "true")
            if max_files_per_trigger is not None:
                reader = reader.option("maxFilesPerTrigger", str(max_files_per_trigger))
            files = reader.load(str(folder)).select(F.input_file_name().alias("file"), "value")
            parts.append(checked_lines(files, policy, item, slots))
    rows = parts[0]
    for part in parts[1:]:
        rows = rows.unionByName(part)
    return rows


def checked_lines(files: DataFrame, streamed: Streamed, item: Input, slots: int | None = None) -> DataFrame:
    """The lines of `files` (`file`, `value`: a whole file) of input `item`, checked (module
    docstring). A file is read whole, in one task: with `slots` over one, its numbered lines are
    spread round-robin over that many tasks before they are parsed, so that a micro-batch of one
    large file is parsed on every core."""
    lines = files.select(F.xxhash64("file").alias(FILE_ID),
                         F.posexplode(F.split("value", "\n")).alias(POSITION, "value"))
    if slots is not None and slots > 1:
        lines = lines.repartition(slots)
    typed = validate(item.schema, json_lines(lines, FILE_ID, POSITION))
    fields = [*item.schema.field_names, FILE_ID, POSITION]
    return typed.select(
        F.lit(item.name).alias("input"),
        F.to_json(F.struct(*streamed.policy.key), _JSON).alias("key"),
        F.col(streamed.policy.time_fields[item.name]).alias("event_ms"),
        F.col(REASON).alias("reason"),
        F.to_json(F.struct(*fields), _JSON).alias("row"),
        F.col("_row").alias("original"),
    )
