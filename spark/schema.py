"""The connector's fixed row schema (issue 16 item 2, spark-connector.md §10) and the Arrow
record batches built from decoded columns (§6: the Arrow schema is derived from the Spark
schema with ``to_arrow_schema``, never written by hand)."""

from __future__ import annotations

import functools

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from aiorocketmq.client import Columns

DDL = (
    "topic STRING, brokerName STRING, queueId INT, queueOffset BIGINT, msgId STRING, "
    "tags STRING, keys STRING, body BINARY, properties MAP<STRING,STRING>, "
    "bornTimestamp TIMESTAMP, storeTimestamp TIMESTAMP, bornHost STRING, storeHost STRING, "
    "reconsumeTimes INT"
)


_TYPES: dict[str, DataType] = {
    "STRING": StringType(),
    "INT": IntegerType(),
    "BIGINT": LongType(),
    "BINARY": BinaryType(),
    "TIMESTAMP": TimestampType(),
    "MAP<STRING,STRING>": MapType(StringType(), StringType()),
}


@functools.cache
def spark_schema() -> StructType:
    """DDL as a StructType, built without a JVM (executors and tests need none)."""
    fields = [col.strip().split(" ", 1) for col in DDL.split(", ")]
    return StructType([StructField(name, _TYPES[kind]) for name, kind in fields])


@functools.cache
def arrow_schema() -> pa.Schema:
    return to_arrow_schema(spark_schema(), timezone="UTC")


def check_user_schema(schema: object) -> None:
    """The schema is fixed, as Kafka's source's: a user schema is refused unless equal."""
    if schema is not None and schema != spark_schema():
        raise ValueError(
            f"the rocketmq source has a fixed schema; do not pass .schema(...) (its columns: {DDL})"
        )


def to_batch(cols: Columns, broker_name: str) -> pa.RecordBatch:
    """One Arrow record batch of the decoded rows (timestamps: ms -> µs, UTC)."""
    n = len(cols)
    ts = pa.timestamp("us", tz="UTC")
    arrays = [
        pa.array(cols.topic, pa.string()),
        pa.array([broker_name] * n, pa.string()),
        pa.array(cols.queue_id, pa.int32()),
        pa.array(cols.queue_offset, pa.int64()),
        pa.array(cols.msg_id, pa.string()),
        pa.array(cols.tags, pa.string()),
        pa.array(cols.keys, pa.string()),
        pa.array(cols.body, pa.binary()),
        pa.array(cols.properties, pa.map_(pa.string(), pa.string())),
        pa.array([t * 1000 for t in cols.born_timestamp], pa.int64()).cast(ts),
        pa.array([t * 1000 for t in cols.store_timestamp], pa.int64()).cast(ts),
        pa.array(cols.born_host, pa.string()),
        pa.array(cols.store_host, pa.string()),
        pa.array(cols.reconsume_times, pa.int32()),
    ]
    schema = arrow_schema()
    return pa.RecordBatch.from_arrays(
        [a.cast(f.type) for a, f in zip(arrays, schema, strict=True)], schema=schema
    )
