"""A session keeps the classes generated for its plans: a plan met again after many others is not
compiled again (`quotaplane.core.spark.session.DEFAULT_CONF`, `CODEGEN_CACHE`)."""

from __future__ import annotations

from typing import Any

from pyspark.sql import functions as F

OTHERS = 120  # more than Spark's default of 100 classes kept


def _compiled(spark: Any) -> int:
    """Classes compiled by this JVM so far (Spark's code generation metrics)."""
    return int(spark._jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME().getCount())


def _generate(spark: Any, i: int) -> None:
    """Generate and compile the code of a small plan of its own (the literal is in the code), as
    `explain("codegen")` does, without running it."""
    df = spark.range(4).select((F.col("id") * F.lit(i + 2)).alias("x")).where(F.col("x") > F.lit(i))
    spark._jvm.PythonSQLUtils.explainString(df._jdf.queryExecution(), "codegen")


def test_a_plan_met_again_after_many_others_is_not_compiled_again(spark: Any) -> None:
    _generate(spark, 0)
    start = _compiled(spark)
    for i in range(1, OTHERS + 1):
        _generate(spark, i)
    between = _compiled(spark)
    assert between - start >= OTHERS  # each of the others compiled its own class
    _generate(spark, 0)
    assert _compiled(spark) == between
