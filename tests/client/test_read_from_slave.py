"""Reading from slaves (issue 18 item 6; protocol.md 12.8): a push consumer keeps consuming
from the slave while its master is down (findBrokerAddressInSubscribe falls back to it) and
resumes on the master, without loss, when it returns; the master suggests the slave
(suggestWhichBrokerId) for cold data when slaveReadEnable is set."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiorocketmq.client import (
    ConsumeFromWhere,
    ConsumeStatus,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
)
from aiorocketmq.client.consumer.types import PushOptions
from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from tests.broker.wire import create_topic, pull, send_v2
from tests.cluster import Cluster, running
from tests.util import wait_until

SLAVE = {"brokerName": "broker-a", "brokerId": "1", "brokerRole": "SLAVE",
         "haSendHeartbeatInterval": "1000", "slaveSyncInterval": "300"}  # fmt: skip
FAST: PushOptions = {
    "rebalance_interval": 1000,
    "persist_consumer_offset_interval": 300,
    "poll_name_server_interval": 500,
    "heartbeat_broker_interval": 1000,
    "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
}


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Cluster]:
    with running(tmp_path, ("broker-a",)) as cluster:
        cluster.add_broker("broker-a-s", sets=SLAVE)
        yield cluster


async def test_consumers_read_from_the_slave_while_the_master_is_down(pair: Cluster) -> None:
    """Issue 18 item 6: 200 messages replicated, the master killed (SIGKILL) mid-way through
    consuming: the rest come from the slave; the master restarted: 100 more arrive from it;
    every message consumed, none lost."""
    master = pair.brokers["broker-a"]
    async with RemotingClient() as admin:
        assert (await admin.invoke(master.addr, create_topic("HaRead", 2))).code == 0
    got: list[bytes] = []
    gate = asyncio.Event()

    async def listener(msgs: list[MessageExt], _ctx: object) -> ConsumeStatus:
        await gate.wait()  # until the master is gone, only the first messages go through
        got.extend(m.body for m in msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    async with Producer("pg_ha_read", namesrv_addr=pair.namesrv_addr) as producer:
        for i in range(200):
            await producer.send(Message("HaRead", b"a%03d" % i))
    await _replicated(pair)
    opts: PushOptions = {**FAST, "pull_batch_size": 8, "pull_threshold_for_queue": 16}
    consumer = PushConsumer("cg_ha_read", namesrv_addr=pair.namesrv_addr, **opts)
    consumer.subscribe("HaRead", "*")
    consumer.register_message_listener(listener)
    async with consumer:
        await asyncio.sleep(1.0)  # queues assigned, the first pulls parked behind the gate
        pair.kill_broker("broker-a")
        gate.set()
        await wait_until(lambda: len(set(got)) >= 200, 30)
        pair.start_broker("broker-a")
        async with Producer("pg_ha_read2", namesrv_addr=pair.namesrv_addr) as producer:
            for i in range(100):
                await producer.send(Message("HaRead", b"b%03d" % i))
        await wait_until(lambda: len(set(got)) >= 300, 30)
        await _committed_on_master(pair)  # the offsets reached the master once it was back
    assert set(got) == {b"a%03d" % i for i in range(200)} | {b"b%03d" % i for i in range(100)}


async def _committed_on_master(cluster: Cluster) -> None:
    """Until the master holds the group's offsets at the end of both queues."""
    addr = cluster.brokers["broker-a"].addr
    async with RemotingClient() as cli, asyncio.timeout(15):
        while True:
            done = 0
            for q in range(2):
                top = await cli.invoke(addr, api.queue_request(C.GET_MAX_OFFSET, "HaRead", q))
                query = api.query_consumer_offset("cg_ha_read", "HaRead", q)
                mine = await cli.invoke(addr, query)
                done += mine.code == 0 and mine.ext_fields["offset"] == top.ext_fields["offset"]
            if done == 2:
                return
            await asyncio.sleep(0.1)


async def _replicated(cluster: Cluster) -> None:
    """Until the slave's queues hold what the master's do (and the topic reached it)."""
    master, slave = cluster.brokers["broker-a"].addr, cluster.brokers["broker-a-s"].addr
    async with RemotingClient() as cli:

        async def total(addr: str) -> int:
            n = 0
            for q in range(2):
                resp = await cli.invoke(addr, api.queue_request(C.GET_MAX_OFFSET, "HaRead", q))
                n += api.parse_offset(resp, addr) if resp.code == 0 else 0
            return n

        async with asyncio.timeout(20):
            while True:
                if await total(slave) == await total(master) == 200:
                    return
                await asyncio.sleep(0.1)


async def test_the_master_suggests_the_slave_for_cold_data(tmp_path: Path) -> None:
    """PullMessageProcessor: with slaveReadEnable (set at run time: UPDATE_BROKER_CONFIG), data
    no longer in memory (here: any, accessMessageInMemoryMaxRatio 0) is answered with
    suggestWhichBrokerId = the group's whichBrokerWhenConsumeSlowly (1); without it, always
    the master (0)."""
    with running(tmp_path, ("broker-c",), {"accessMessageInMemoryMaxRatio": "0"}) as cluster:
        addr = cluster.brokers["broker-c"].addr
        async with RemotingClient() as cli:
            assert (await cli.invoke(addr, create_topic("HaCold", 1))).code == 0
            for i in range(5):
                assert (await cli.invoke(addr, send_v2("HaCold", b"%d" % i, queue_id=0))).code == 0
            first = pull("cg_cold", "HaCold", 0, 0, sys_flag=4, suspend_ms=0, subscription="*",
                         max_msgs=1)  # fmt: skip
            plain = await cli.invoke(addr, first)
            assert plain.code == 0 and plain.ext_fields["suggestWhichBrokerId"] == "0"
            update = api.request(C.UPDATE_BROKER_CONFIG, None, b"slaveReadEnable=true\n")
            assert (await cli.invoke(addr, update)).code == 0
            cold = await cli.invoke(addr, first)
            assert cold.code == 0 and cold.ext_fields["suggestWhichBrokerId"] == "1"
