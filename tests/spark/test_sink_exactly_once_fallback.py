"""The exactly-once sink against a broker without transactional batches (issue 34): broker-b
runs with ``enableBatchTransaction=false``, so it refuses a batch of halves (13, as 4.9.8's
CommitLog) and knows no END_TRANSACTION_BATCH (3); the sink sends and ends broker-b's halves
one at a time, broker-a's in batches, in the same write -- every row once, a queue's rows
in row order."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aiorocketmq.broker.half_record import HALF_RECORD
from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.message import MessageExt, decode_records
from aiorocketmq.remoting.protocol.topic import TRANS_HALF_TOPIC as HALF_TOPIC
from aiorocketmq.spark.sink_txlog import WRITER_PROPERTY
from tests.client.conftest import create_everywhere
from tests.cluster import Cluster, running
from tests.spark.test_sink_exactly_once import OP_TOPIC, eo_write, read_back

pytestmark = [pytest.mark.spark, pytest.mark.slow]

QUIET = {"transactionTimeOut": "600000"}  # no check-back: every half ends by the sink's END


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = Path(tmp_path_factory.mktemp("spark-eo-fallback"))
    with running(root) as c:
        c.add_broker("broker-a", sets=QUIET)
        c.add_broker("broker-b", sets={**QUIET, "enableBatchTransaction": "false"})
        yield c


def op_sizes(addr: str) -> list[int]:
    """How many halves each op message of a broker names (one per END_TRANSACTION; a
    batch END's names all of its request's)."""
    return [len(op.body.split(b",")) for op in records(addr, OP_TOPIC)]


def parked(addr: str) -> list[int]:
    """How many rows each half record of a broker holds (HALF_RECORD; 1 for a lone half)."""
    return [int(h.properties.get(HALF_RECORD, "1")) for h in records(addr, HALF_TOPIC)]


def records(addr: str, topic: str) -> list[MessageExt]:
    """Every record of the system topic's queue 0 on the broker at ``addr``."""

    async def read() -> list[MessageExt]:
        got: list[MessageExt] = []
        offset = 0
        async with RemotingClient() as cli:
            while True:
                req = api.pull_message("cg_ops", topic, 0, offset, max_nums=32,
                                       sys_flag=api.FLAG_SUBSCRIPTION, suspend_ms=0,
                                       subscription="*")  # fmt: skip
                resp = await cli.invoke(addr, req)
                if resp.code != 0:
                    return got
                got += decode_records(resp.body)
                offset = int(resp.ext_fields["nextBeginOffset"])

    return asyncio.run(read())


def test_a_broker_without_batches_gets_one_half_and_one_end_a_request(
    spark: Any, cluster: Cluster
) -> None:
    asyncio.run(create_everywhere(cluster, "EoMixed"))
    # odd rows name a queue (broker-a's: the first broker with the id), every fourth row a
    # key (k0-k2 hash to broker-b's queues 1-3, the others to broker-a's), the rest neither
    rows = [
        (b"m%04d" % i, i % 4 if i % 2 else None, f"k{i % 7}" if i % 4 == 2 else None)
        for i in range(400)
    ]
    df = spark.createDataFrame(rows, "body binary, queueId int, keys string")  # 2 slices
    eo_write(df, cluster, topic="EoMixed", batchSize="16")  # 7 runs a task: both brokers
    got = read_back(cluster, "EoMixed", 400)
    assert sorted(m.body for m in got) == sorted(b for b, _, _ in rows)  # each once
    on = {m.broker_name for m in got}
    assert on == {"broker-a", "broker-b"}  # round robin reached both
    pinned = {b for b, q, k in rows if q is not None or k is not None}
    assert any(m.broker_name == "broker-b" and m.body in pinned for m in got)
    for writer in {m.properties[WRITER_PROPERTY] for m in got}:  # ordered rows in row order
        mine = [m for m in got if m.properties[WRITER_PROPERTY] == writer and m.body in pinned]
        for where in {(m.broker_name, m.queue_id) for m in mine}:
            in_queue = [m.body for m in mine if (m.broker_name, m.queue_id) == where]
            assert in_queue == sorted(in_queue), where
    a_ops = op_sizes(cluster.brokers["broker-a"].addr)
    b_ops = op_sizes(cluster.brokers["broker-b"].addr)
    on_a = sum(1 for m in got if m.broker_name == "broker-a")
    on_b = len(got) - on_a
    # broker-a: runs of rows parked as one half each, ended by batch ENDs (an op names many)
    a_halves = parked(cluster.brokers["broker-a"].addr)
    assert sum(a_halves) == on_a and len(a_halves) < on_a
    assert sum(a_ops) == len(a_halves) and len(a_ops) < len(a_halves)
    assert parked(cluster.brokers["broker-b"].addr) == [1] * on_b  # a half a row
    assert b_ops == [1] * on_b  # one END_TRANSACTION a half
