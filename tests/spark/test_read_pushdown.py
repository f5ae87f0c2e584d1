"""Filters pushed to the brokers with ``pushFilters=true`` (issue 34 item 2): ``WHERE tags =
'A'`` becomes the pulls' TAG subscription, ``keys`` filters SQL92 terms over KEYS (with the
tags then as ``TAGS IN``) and ``storeTimestamp`` bounds each queue's start and end, so the
brokers hand over fewer messages: counted by their ``messages_out`` counter (messages handed
to pulls) of the reader's group, not only by the rows Spark returns. Brokers without
property filtering (4.9.8's default) get no keys terms: Spark filters the keys.

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
    only those; a TAG subExpression intersects; with an SQL92 subscription the tags are
    AND-ed to it as ``TAGS IN``."""
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
    assert out == 5  # (a) AND TAGS IN ('A'): before keys pushdown 15, every n >= 15
    rows, out = query("tags = 'A' OR keys IS NULL")  # nothing to push: Spark filters
    assert len(rows) == 30 and out == 30
    df = source(spark, cluster, topic)  # without the option, nothing is pushed
    rows, out = handed_out(cluster, topic, df.where("tags = 'A'").collect)
    assert len(rows) == 10 and out == 30


def test_store_time_filters_bound_the_queues(spark: Any, cluster: Cluster) -> None:
    """``storeTimestamp >= t`` / ``< t``: the right rows, and the brokers hand over no
    message outside the bounds but at most one per queue (the check of the broker's answer,
    spark/by_time.py) and one more per queue holding a message stored exactly at t (is it
    the first stored then? 4.9.8 may name any of them)."""
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
    checks = 4 + len({(r[0], r[1]) for r in rows if r[3] == cut})  # 4 queues

    def query(where: Callable[[Any], Any]) -> tuple[list[Any], int]:
        df = source(spark, cluster, topic, False, pushFilters="true")
        return handed_out(cluster, topic, df.where(where(df)).collect)

    got, out = query(lambda df: df.storeTimestamp >= at)
    assert sorted(r.body for r in got) == sorted(f"new{i}".encode() for i in range(6))
    assert 6 <= out <= 6 + checks  # without the pushdown all 36
    got, out = query(lambda df: df.storeTimestamp < at)
    assert sorted(r.body for r in got) == sorted(f"m{i}".encode() for i in range(30))
    assert 30 <= out <= 30 + checks
    got, out = query(lambda df: (df.storeTimestamp >= at) & (df.tags == "A"))
    assert len(got) == 6 and 6 <= out <= 6 + checks


def send_keyed(cluster: Cluster, topic: str) -> None:
    """30 messages: tags A, B, C in turn, property n = their index, and by index % 6 the
    keys k0, k1, "k2 x" (two keys), it's, 5.0 and none."""
    asyncio.run(create_everywhere(cluster, topic, 2))
    keys: list[str | list[str] | None] = ["k0", "k1", ["k2", "x"], "it's", "5.0", None]
    with Producer("pg_spark_push", namesrv_addr=cluster.namesrv_addr) as p:
        for i in range(30):
            p.send(Message(topic, f"m{i}".encode(), tags="ABC"[i % 3], keys=keys[i % 6],
                           properties={"n": str(i)}))  # fmt: skip


def indexes(rows: list[Any]) -> list[int]:
    return sorted(int(r.body[1:]) for r in rows)


def test_keys_filters_are_evaluated_by_the_brokers(spark: Any, cluster: Cluster) -> None:
    """``keys = …``, ``IN``, ``IS NOT NULL``, ``<>``: the rows Spark's own filter gives, and
    the brokers hand over only those (SQL92 terms over KEYS; on main: all 30); with tags, a
    TAG subExpression or an SQL92 subscription, AND-ed; ``IS NULL`` stays in Spark."""
    topic = "SparkPushKeys"
    send_keyed(cluster, topic)

    def query(where: Callable[[Any], Any], **opts: str) -> tuple[list[int], int]:
        df = source(spark, cluster, topic, False, pushFilters="true", **opts)
        rows, out = handed_out(cluster, topic, df.where(where(df)).collect)
        return indexes(rows), out

    def every(step: int, at: int) -> list[int]:
        return [i for i in range(30) if i % step == at]

    assert query(lambda df: df.keys == "k0") == (every(6, 0), 5)
    assert query(lambda df: df.keys.isin("k1", "it's")) == (sorted(every(6, 1) + every(6, 3)), 10)
    assert query(lambda df: df.keys == "k2 x") == (every(6, 2), 5)
    assert query(lambda df: df.keys == "5") == ([], 0)  # strings: "5.0" is not "5"
    assert query(lambda df: df.keys.isNotNull()) == ([i for i in range(30) if i % 6 != 5], 25)
    assert query(lambda df: df.keys != "k0") == ([i for i in range(30) if i % 6 not in (0, 5)], 20)
    assert query(lambda df: df.keys.isNull()) == (every(6, 5), 30)  # not pushed
    assert query(lambda df: (df.keys == "k0") & (df.tags == "A")) == (every(6, 0), 5)
    assert query(lambda df: df.keys == "k1", subExpression="B || C") == (every(6, 1), 5)
    assert query(lambda df: df.keys == "k1", subExpression="A || C") == ([], 0)
    n = query(lambda df: df.keys == "k0", expressionType="SQL92", subExpression="n >= 15")
    assert n == ([18, 24], 2)
    df = source(spark, cluster, topic)  # without the option, nothing is pushed
    rows, out = handed_out(cluster, topic, df.where(df.keys == "k0").collect)
    assert indexes(rows) == every(6, 0) and out == 30


def test_keys_filters_stay_in_spark_where_brokers_refuse_sql92(spark: Any, tmp_path: Path) -> None:
    """Brokers with 4.9.8's default ``enablePropertyFilter=false`` refuse an SQL92 pull:
    the keys filters are left to Spark (the right rows, every message handed over) and tags
    are still pushed as a TAG subscription."""
    with running(tmp_path, ("broker-a", "broker-b")) as plain:
        topic = "SparkPushKeysOff"
        send_keyed(plain, topic)

        def query(where: Callable[[Any], Any]) -> tuple[list[int], int]:
            df = source(spark, plain, topic, False, pushFilters="true")
            rows, out = handed_out(plain, topic, df.where(where(df)).collect)
            return indexes(rows), out

        assert query(lambda df: df.keys == "k0") == ([i for i in range(0, 30, 6)], 30)
        assert query(lambda df: (df.keys == "k0") & (df.tags == "A")) == (
            [i for i in range(0, 30, 6)],
            10,
        )
        assert query(lambda df: df.keys.isin("k1", "it's")) == (
            sorted([i for i in range(30) if i % 6 in (1, 3)]),
            30,
        )
