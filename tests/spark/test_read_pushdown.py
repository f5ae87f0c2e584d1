"""Filters pushed to the brokers with ``pushFilters=true`` (issue 34 item 2): ``WHERE tags =
'A'`` becomes the pulls' TAG subscription and ``storeTimestamp`` bounds become each queue's
start and end, so the brokers hand over fewer messages: counted by their ``messages_out``
counter (messages handed to pulls) of the reader's group, not only by the rows Spark
returns. An SQL92 subscription keeps the tag filter in Spark.

Each query loads its own DataFrame: Spark reuses a DataFrame's last pushed-down read for a
later query on it without a filter to hand over (spark/source.py PushingBatchReader)."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aiorocketmq.client import Message
from aiorocketmq.client.sync import Producer
from aiorocketmq.spark.cluster import READER_GROUP
from tests.client.conftest import create_everywhere
from tests.cluster import Cluster, running
from tests.scrape import scrape, value
from tests.spark.test_read import source
from tests.spark.test_read_timestamps import read_all
from tests.util import wait_until

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = Path(tmp_path_factory.mktemp("spark-pushdown"))
    with running(root, ("broker-a", "broker-b"), {"enablePropertyFilter": "true"}) as c:
        yield c


def handed_out(cluster: Cluster, topic: str, action: Callable[[], Any]) -> tuple[Any, int]:
    """``action()``'s result and how many messages of ``topic`` the brokers handed to the
    source's pulls meanwhile."""

    def total() -> int:
        n = 0
        for broker in cluster.brokers.values():
            assert broker.proc is not None
            samples = asyncio.run(scrape(broker.proc.metrics_port()))
            n += int(value(samples, "rocketmq_messages_out_total", topic=topic,
                           consumer_group=READER_GROUP))  # fmt: skip
        return n

    before = total()
    result = action()
    return result, total() - before


def send_tagged(cluster: Cluster, topic: str) -> None:
    """30 messages: tags A, B, C in turn, property n = their index."""
    asyncio.run(create_everywhere(cluster, topic, 2))
    with Producer("pg_spark_push", namesrv_addr=cluster.namesrv_addr) as p:
        for i in range(30):
            p.send(Message(topic, f"m{i}".encode(), tags="ABC"[i % 3], properties={"n": str(i)}))


def test_a_tag_filter_reads_only_matching_messages(spark: Any, cluster: Cluster) -> None:
    """``tags = 'A'`` and ``tags IN ('A', 'B')``: the right rows, and the brokers hand over
    only those; a TAG subExpression intersects; with an SQL92 subscription the tag filter
    stays in Spark (the brokers hand over what the expression matches)."""
    topic = "SparkPushTags"
    send_tagged(cluster, topic)

    def query(where: str, **opts: str) -> tuple[list[Any], int]:
        df = source(spark, cluster, topic, False, pushFilters="true", **opts)
        return handed_out(cluster, topic, df.where(where).collect)

    rows, out = query("tags = 'A'")
    assert sorted(r.body for r in rows) == sorted(f"m{i}".encode() for i in range(0, 30, 3))
    assert out == 10
    rows, out = query("tags IN ('A', 'B')")
    assert len(rows) == 20 and {r.tags for r in rows} == {"A", "B"} and out == 20
    rows, out = query("tags IN ('A', 'B')", subExpression="B || C")
    assert {r.tags for r in rows} == {"B"} and len(rows) == 10 and out == 10
    rows, out = query("tags = 'A'", subExpression="B || C")
    assert rows == [] and out == 0
    rows, out = query("tags = 'A'", expressionType="SQL92", subExpression="n >= 15")
    assert sorted(r.body for r in rows) == sorted(f"m{i}".encode() for i in range(15, 30, 3))
    assert out == 15  # every message n >= 15, whatever its tag: Spark kept the tag filter
    rows, out = query("tags = 'A' OR keys IS NULL")  # nothing to push: Spark filters
    assert len(rows) == 30 and out == 30
    df = source(spark, cluster, topic)  # without the option, nothing is pushed
    rows, out = handed_out(cluster, topic, df.where("tags = 'A'").collect)
    assert len(rows) == 10 and out == 30


def test_store_time_filters_bound_the_queues(spark: Any, cluster: Cluster) -> None:
    """``storeTimestamp >= t`` / ``< t``: the right rows, and the brokers hand over no
    message outside the bounds but at most one per queue (the check of the broker's answer,
    spark/cluster.py)."""
    topic = "SparkPushTime"
    send_tagged(cluster, topic)
    last = max(r[3] for r in read_all(spark, cluster, topic))
    asyncio.run(wait_until(lambda: dt.datetime.now(dt.UTC).timestamp() * 1000 > last + 1, 10))
    with Producer("pg_spark_push", namesrv_addr=cluster.namesrv_addr) as p:
        for i in range(6):
            p.send(Message(topic, f"new{i}".encode(), tags="A"))
    rows = read_all(spark, cluster, topic)
    cut = min(r[3] for r in rows if r[4].startswith(b"new"))
    at = dt.datetime.fromtimestamp(cut / 1000, dt.UTC)

    def query(where: Callable[[Any], Any]) -> tuple[list[Any], int]:
        df = source(spark, cluster, topic, False, pushFilters="true")
        return handed_out(cluster, topic, df.where(where(df)).collect)

    got, out = query(lambda df: df.storeTimestamp >= at)
    assert sorted(r.body for r in got) == sorted(f"new{i}".encode() for i in range(6))
    assert 6 <= out <= 6 + 4  # 4 queues; without the pushdown all 36
    got, out = query(lambda df: df.storeTimestamp < at)
    assert sorted(r.body for r in got) == sorted(f"m{i}".encode() for i in range(30))
    assert 30 <= out <= 30 + 4
    got, out = query(lambda df: (df.storeTimestamp >= at) & (df.tags == "A"))
    assert len(got) == 6 and 6 <= out <= 6 + 4
