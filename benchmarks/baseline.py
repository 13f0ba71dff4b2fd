"""The bare Spark job: the floor any Spark job over the same input must pay.

Scan the same Parquet input, group by the same key and time bucket the policy uses, aggregate,
and write the result as Parquet, exactly as the policy stage writes its decisions.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F


def bare_job(spark: SparkSession, parquet: str, keys: Sequence[str], time_col: str, bucket_ms: int,
             value_col: str, out: Path) -> int:
    """Run the baseline; return the number of output rows."""
    return bare_aggregate(spark.read.parquet(parquet), keys, time_col, bucket_ms, value_col, out)


def bare_aggregate(df: DataFrame, keys: Sequence[str], time_col: str, bucket_ms: int, value_col: str,
                   out: Path) -> int:
    """The baseline's grouping and write over rows read already; the number of output rows."""
    bucket = F.floor(F.col(time_col) / F.lit(bucket_ms)).alias("bucket")
    agg = df.groupBy(*keys, bucket).agg(
        F.count(F.lit(1)).alias("rows"),
        F.sum(value_col).alias("total"),
        F.max(value_col).alias("peak"),
    )
    agg.write.mode("overwrite").parquet(str(out))
    return int(df.sparkSession.read.parquet(str(out)).count())
