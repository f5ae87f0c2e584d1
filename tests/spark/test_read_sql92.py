"""The rocketmq source with an SQL92 subscription (issue 33): expressionType=SQL92 sends
subExpression in every pull, and the brokers (enablePropertyFilter=true) serve exactly the
matching rows."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aiorocketmq.client import Message
from aiorocketmq.client.sync import Producer
from tests.broker.sql92_wire import EXPECTED, MATRIX
from tests.client.conftest import create_everywhere
from tests.cluster import Cluster, running

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = Path(tmp_path_factory.mktemp("spark-sql92"))
    with running(root, ("broker-a", "broker-b"), {"enablePropertyFilter": "true"}) as c:
        yield c


def test_batch_read_with_an_sql92_subscription(spark: Any, cluster: Cluster) -> None:
    """Every matrix message twice, over both brokers; the rows read are exactly the ones the
    expression matches (no tag re-filtering of an SQL92 answer)."""
    asyncio.run(create_everywhere(cluster, "SparkSql", 2))
    with Producer("pg_spark_sql", namesrv_addr=cluster.namesrv_addr) as p:
        for r in range(2):
            for body, props in MATRIX.items():
                extra = {k: v for k, v in props.items() if k != "TAGS"}
                p.send(Message("SparkSql", f"{body}#{r}".encode(), tags=props.get("TAGS"),
                               properties=extra))  # fmt: skip
    for expression in ("a > 5 OR b = 'x'", "TAGS = 'T1' AND a = 7", "a IS NULL"):
        df = (spark.read.format("rocketmq").option("nameServer", cluster.namesrv_addr)
              .option("subscribe", "SparkSql").option("subExpression", expression)
              .option("expressionType", "SQL92").load())  # fmt: skip
        got = sorted(r.body.decode() for r in df.select("body").collect())
        assert got == sorted(f"{m}#{r}" for m in EXPECTED[expression] for r in range(2))
