"""Brokers answering fewer messages than a pull asks for (a message read from disk:
maxTransferCountOnMessageInDisk, 8 by default; here maxTransferCountOnMessageInMemory=4 makes
every answer short): the reader's window of pulls steps by what the answers cover, so its
pulls line up and the brokers hand over about each row once, and every row is read once, in
order. ``cluster.read_range`` runs in this process (no Spark): the executor's code."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiorocketmq.client import Message
from aiorocketmq.client.sync import Producer
from aiorocketmq.spark import cluster as source_cluster
from aiorocketmq.spark.offsets import QueueRange
from aiorocketmq.spark.options import read_options
from tests.client.conftest import create_everywhere
from tests.cluster import Cluster, running
from tests.spark.test_read_pushdown import handed_out

pytestmark = pytest.mark.slow
ROWS = 400


@pytest.fixture(scope="module")
def short(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = Path(tmp_path_factory.mktemp("spark-short"))
    with running(root, ("broker-a",), {"maxTransferCountOnMessageInMemory": "4"}) as c:
        yield c


def test_short_answers_line_up(short: Cluster) -> None:
    topic = "SparkShortAnswers"
    asyncio.run(create_everywhere(short, topic, 1))
    with Producer("pg_spark_short", namesrv_addr=short.namesrv_addr) as p:
        for i in range(ROWS):
            p.send(Message(topic, f"m{i}".encode()))
    opts = read_options({"nameServer": short.namesrv_addr, "subscribe": topic,
                         "pullBatchSize": "32"}, streaming=False)  # fmt: skip
    r = QueueRange(topic, "broker-a", 0, 3, ROWS)

    def read() -> list[int]:
        return [o for b in source_cluster.read_range(opts, r) for o in b["queueOffset"].to_pylist()]

    offsets, out = handed_out(short, topic, read)
    assert offsets == list(range(3, ROWS))
    # stepping by pullBatchSize, a window of 8 pulls 32 apart used the first 4-message
    # answer of its 8 and discarded the rest and the window sent ahead: 2,665 messages
    # handed over for these 397 rows (445 stepping by the answers)
    assert out <= 2 * ROWS, out
