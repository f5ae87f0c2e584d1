"""One local Spark session for every Spark test (spark-connector.md §11): loopback only,
the venv's interpreter for Python workers, small shuffles, the JIT kept cheap; and a real
cluster (a name server and two brokers) per test module."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import Cluster, running

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need this venv's pyarrow
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

pytestmark = pytest.mark.spark


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("aiorocketmq-tests")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    from aiorocketmq.spark import register

    register(session)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A name server and two brokers shared by a module's tests (each test uses its own
    topics)."""
    with running(Path(tmp_path_factory.mktemp("spark-cluster")), ("broker-a", "broker-b")) as c:
        yield c
