"""The landing directory as a Structured Streaming source: one row per new file.

Each input is a folder of the landing (`<landing>/<input>/`, the layout of docs/telemetry.md) read
with Spark's file source as whole texts (`wholetext`): a row is a file (`input`, `file`, `value`),
so the micro-batch knows each line's place in its file, as the batch reader does. Files whose names
start with `.` or `_` are not read (the live service writes a round under such a name and renames
it when whole). A folder that does not exist yet is created, empty: the stream picks up its files
when they come.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F


def landing_files(spark: SparkSession, landing: Path, inputs: list[str],
                  max_files_per_trigger: int | None = None) -> DataFrame:
    frames = []
    for name in inputs:
        folder = landing / name
        folder.mkdir(parents=True, exist_ok=True)
        reader = spark.readStream.format("text").option("wholetext", "true")
        if max_files_per_trigger is not None:
            reader = reader.option("maxFilesPerTrigger", str(max_files_per_trigger))
        frames.append(reader.load(str(folder)).select(
            F.lit(name).alias("input"), F.input_file_name().alias("file"), "value"))
    source = frames[0]
    for frame in frames[1:]:
        source = source.unionByName(frame)
    return source
