"""The local Spark session the Spark benchmarks share: loopback only, the venv's
interpreter for workers, the source registered (spark-connector.md §2)."""

from __future__ import annotations

import os
import sys
from typing import Any


def start_spark(app: str, **conf: str) -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need this venv's pyarrow
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master("local[2]")
        .appName(app)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    from aiorocketmq.spark import register

    register(session)
    return session
