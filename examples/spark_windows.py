"""A Structured Streaming job: read a topic, count its messages per tag in 10-second windows,
write the counts to another topic, then read them back.

Run, with `make run` going: ``.venv/bin/python examples/spark_windows.py [namesrv]``
(default 127.0.0.1:9876). It first sends 200 "clicks" with tags to ``SparkClicks`` so there
is something to count; the query runs with ``Trigger.AvailableNow`` (everything there when it
starts, then it stops) and keeps its progress in ``./data/spark-example-checkpoint``: run it
again and it counts only what arrived since.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers use this venv
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import aiorocketmq.spark
from aiorocketmq.client import Message
from aiorocketmq.client.sync import Producer


def main(namesrv: str) -> None:
    with Producer("spark_example", namesrv_addr=namesrv) as producer:
        for i in range(200):
            tag = random.choice(["home", "search", "cart"])
            producer.send(Message("SparkClicks", f"click {i}".encode(), tags=tag))
        producer.send(Message("SparkWindowCounts", b"created"))  # the output topic exists

    session = (
        SparkSession.builder.master("local[2]").appName("rocketmq-windows")
        .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )  # fmt: skip
    session.sparkContext.setLogLevel("ERROR")
    aiorocketmq.spark.register(session)

    clicks = (
        session.readStream.format("rocketmq")
        .option("nameServer", namesrv)
        .option("subscribe", "SparkClicks")
        .option("startingOffsets", "earliest")
        .load()
    )

    def count_windows(batch: DataFrame, batch_id: int) -> None:
        counts = batch.groupBy(F.window("storeTimestamp", "10 seconds"), "tags").count()
        out = counts.select(
            F.col("tags"),
            F.to_json(F.struct(
                F.col("window.start").cast("string").alias("windowStart"), "tags", "count",
            )).cast("binary").alias("body"),
        )  # fmt: skip
        (out.write.format("rocketmq").mode("append").option("nameServer", namesrv)
         .option("topic", "SparkWindowCounts").save())  # fmt: skip
        print(f"batch {batch_id}: {batch.count()} clicks -> {counts.count()} window counts")

    checkpoint = Path("data") / "spark-example-checkpoint"
    query = (
        clicks.writeStream.foreachBatch(count_windows)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()

    results = (
        session.read.format("rocketmq").option("nameServer", namesrv)
        .option("subscribe", "SparkWindowCounts").load()
        .where(F.col("body") != F.lit(b"created"))
    )  # fmt: skip
    for row in results.select(F.col("body").cast("string")).orderBy("body").collect()[-5:]:
        print(row.body)
    session.stop()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:9876")
