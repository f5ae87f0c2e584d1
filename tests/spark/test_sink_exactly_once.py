"""The sink's ``exactlyOnce`` mode against a real cluster and the local Spark session (issue 34
item 1): half messages sent by the tasks, committed by the driver; an abort or a failed task
rolls its halves back; check-backs answered from the write's commit log. The brokers here
check pending halves every second (Java's default is every minute), and never give up on one
(``transactionCheckMax``), so a slow batch on a busy machine is not dropped.

The standalone-cluster test (an executor JVM killed mid-task, the driver restarted) is
tests/spark/test_sink_exactly_once_standalone.py."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aiorocketmq.client import MessageQueue, MQClientError, PullConsumer
from aiorocketmq.client.sync import run
from aiorocketmq.spark.sink_txlog import (
    BATCH_PROPERTY,
    QUERY_PROPERTY,
    WRITER_PROPERTY,
)
from tests.client.conftest import create_everywhere
from tests.cluster import Cluster, running
from tests.spark.test_sink import read_back

pytestmark = [pytest.mark.spark, pytest.mark.slow]

FAST_CHECKS = {
    "transactionCheckInterval": "1000",
    "transactionTimeOut": "1500",
    "transactionCheckMax": "100000",
}
OP_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"  # one op message per half ended (protocol.md 12.4)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = Path(tmp_path_factory.mktemp("spark-eo-cluster"))
    with running(root, ("broker-a", "broker-b"), sets=FAST_CHECKS) as c:
        yield c


def wait_until(what: str, check: Any, limit: float = 120.0) -> None:
    deadline = time.monotonic() + limit
    while not check():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.2)


def ended(cluster: Cluster) -> int:
    """Half messages ended (committed or rolled back) on every broker so far: their ops."""

    async def count() -> int:
        async with PullConsumer("eo_ops_count", cluster.namesrv_addr) as c:
            total = 0
            for broker in cluster.brokers:
                with contextlib.suppress(MQClientError):  # no op topic yet: none ended
                    total += await c.max_offset(MessageQueue(OP_TOPIC, broker, 0))
            return total

    return run(count(), 30)


def eo_write(df: Any, cluster: Cluster, **options: str) -> None:
    writer = df.write.format("rocketmq").mode("append").option("nameServer", cluster.namesrv_addr)
    writer = writer.option("exactlyOnce", "true")
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.save()


def test_batch_write_commits_every_row_once(spark: Any, cluster: Cluster) -> None:
    """df.write with exactlyOnce: every row visible once, after the job; each message names
    its write, batch and task attempt; rows with a queueId in row order in that queue."""
    asyncio.run(create_everywhere(cluster, "EoBatch"))
    rows = [(b"r%04d" % i, i % 4 if i % 3 else None, f"k{i % 5}") for i in range(400)]
    df = spark.createDataFrame(rows, "body binary, queueId int, keys string")  # 2 slices
    eo_write(df, cluster, topic="EoBatch")
    got = read_back(cluster, "EoBatch", 400)
    assert sorted(m.body for m in got) == sorted(b for b, _, _ in rows)
    writers = {m.properties[WRITER_PROPERTY] for m in got}
    assert len(writers) == 2  # one per task
    assert {m.properties[BATCH_PROPERTY] for m in got} == {"0"}
    assert len({m.properties[QUERY_PROPERTY] for m in got}) == 1
    by_body = {b: (q, k) for b, q, k in rows}
    for writer in writers:  # within a task, a queue's rows in row order
        mine = [m for m in got if m.properties[WRITER_PROPERTY] == writer]
        for where in {(m.broker_name, m.queue_id) for m in mine}:
            in_queue = [m.body for m in mine if (m.broker_name, m.queue_id) == where]
            assert in_queue == sorted(in_queue), where
    for m in got:  # a row's queueId names its queue (broker-a has every id)
        queue_id, _ = by_body[m.body]
        if queue_id is not None:
            assert (m.broker_name, m.queue_id) == ("broker-a", queue_id)
    keyed = {}  # a key's rows (no queueId) share one queue
    for m in got:
        queue_id, key = by_body[m.body]
        if queue_id is None:
            keyed.setdefault(key, set()).add((m.broker_name, m.queue_id))
    assert all(len(queues) == 1 for queues in keyed.values()), keyed
