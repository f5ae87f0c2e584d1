"""The source's pulls are bulk pulls (``bulkPull``, ours): a broker of ours answers each with
up to pullBatchSize (1,024 by default) messages within its 256 KiB byte cap, where a plain
pull gets 32; a broker that ignores the field (``enableBulkPull=false``, as Apache's do)
answers 32, and the reader's window then steps by 32. Either way every row of the range is
read once, in order, and the brokers hand over about each row once.
``cluster.read_range`` runs in this process (no Spark): the executor's code."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from aiorocketmq.client import Layout, Message, PullConsumer, PullStatus, RawPull, decode_layout
from aiorocketmq.client.sync import Producer
from aiorocketmq.spark import cluster as source_cluster
from aiorocketmq.spark.offsets import QueueRange
from aiorocketmq.spark.options import read_options
from tests.client.conftest import create_everywhere
from tests.cluster import Cluster, running
from tests.spark.test_read_pushdown import handed_out

pytestmark = pytest.mark.slow
TOPIC, ROWS = "SparkBulkRead", 6000


@pytest.fixture(scope="module")
def bulk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = Path(tmp_path_factory.mktemp("spark-bulk"))
    with running(root) as c:
        c.add_broker("broker-a")
        c.add_broker("broker-b", sets={"enableBulkPull": "false"})
        asyncio.run(create_everywhere(c, TOPIC, 1))
        with Producer("pg_spark_bulk", namesrv_addr=c.namesrv_addr) as p:
            for i in range(0, ROWS, 100):  # batches go to the two queues in turn
                p.send_batch([Message(TOPIC, f"m{i + k}".encode() * 10) for k in range(100)])
        yield c


@pytest.fixture
def answers(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many messages each of the source's pull answers carried (the SDK's real call,
    watched)."""
    seen: list[int] = []
    real = PullConsumer.pull_raw_many

    async def watched(self: PullConsumer, *args: Any, **kw: Any) -> Sequence[Any]:
        got = await real(self, *args, **kw)
        found = [a for a in got if isinstance(a, RawPull) and a.status is PullStatus.FOUND]
        seen.extend(decode_layout(raw.body, Layout()) for raw in found)
        return got

    monkeypatch.setattr(PullConsumer, "pull_raw_many", watched)
    return seen


@pytest.mark.parametrize(("broker", "most"), [("broker-a", 1024), ("broker-b", 32)])
def test_every_row_once_in_bulk_or_not(
    bulk: Cluster, answers: list[int], broker: str, most: int
) -> None:
    opts = read_options({"nameServer": bulk.namesrv_addr, "subscribe": TOPIC}, streaming=False)
    ends = source_cluster.max_offsets(opts, source_cluster.queues(opts))
    end = ends[TOPIC][broker]["0"]
    assert end >= ROWS // 3  # the producer spread the batches
    r = QueueRange(TOPIC, broker, 0, 5, end)

    def read() -> list[int]:
        return [o for b in source_cluster.read_range(opts, r) for o in b["queueOffset"].to_pylist()]

    offsets, out = handed_out(bulk, TOPIC, read)
    assert offsets == list(range(5, end))
    assert max(answers) == most  # ~170 bytes a record: 1,024 fit the byte cap
    assert out <= 2 * end, out
