"""The Spark forms of a `RecordSchema`: the type of each field and the struct of a row.

`quotaplane.core.records` declares a record in plain Python (the reference engines run without
pyspark); the Spark readers, writers and tests build the Spark types here from that declaration.
"""

from __future__ import annotations

from pyspark.sql import types as T

from quotaplane.core.fields import FieldType
from quotaplane.core.records import Field, RecordSchema

_SPARK_TYPES: dict[FieldType, T.DataType] = {
    "long": T.LongType(), "double": T.DoubleType(), "string": T.StringType(), "time_ms": T.LongType(),
    "bool": T.BooleanType(),
}


def spark_type(f: Field) -> T.DataType:
    """The Spark type of a used (valid) value of `f`: `time_ms` is a long of epoch milliseconds."""
    return _SPARK_TYPES[f.type]


def spark_schema(record: RecordSchema) -> T.StructType:
    """The typed schema of a used (valid) row: optional fields are nullable."""
    return T.StructType([T.StructField(f.name, spark_type(f), not f.required) for f in record.fields])


def raw_schema(record: RecordSchema) -> T.StructType:
    """All fields as strings: how rows are read before they are checked, so nothing is lost."""
    return T.StructType([T.StructField(f.name, T.StringType(), True) for f in record.fields])
