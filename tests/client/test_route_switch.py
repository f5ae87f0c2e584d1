"""Clients follow a broker group's master at the first failure (issue 35 item 3): when
brokerAddrs[0] of a group moves to another address, an ordered producer that pinned a queue
there and a push consumer reading it fetch the topic's route again at once (rate-limited,
one fetch in flight per topic) instead of waiting for the 30 s route poll.

The move, with real processes: broker-a's master is SIGKILLed and another broker process
registers as broker-a's master (brokerId 0) on another port. The clients keep the default
``pollNameServerInterval`` (30 s); the tests assert on what they did -- the route fetches a
failure asked for, the address they now hold for broker-a, where the messages went.
"""

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
    MessageQueue,
    Producer,
    PushConsumer,
    SendStatus,
)
from aiorocketmq.client.core import api
from aiorocketmq.client.core.errors import MQClientError
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.route import MASTER_ID
from tests.broker.wire import create_topic
from tests.cluster import BrokerProc, Cluster, running
from tests.util import wait_until

TOPIC = "SwitchT"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with running(tmp_path, ("broker-a",)) as c:
        yield c


async def move_master(cluster: Cluster, admin: RemotingClient) -> BrokerProc:
    """SIGKILL broker-a's master; start another process as broker-a's master on another
    port, with the topic; until the name server routes the topic there."""
    cluster.kill_broker("broker-a")
    moved = cluster.add_broker("broker-a-moved", sets={"brokerName": "broker-a"})
    assert (await admin.invoke(moved.addr, create_topic(TOPIC, 2))).code == 0
    async with asyncio.timeout(20):
        while True:
            resp = await admin.invoke(cluster.namesrv_addr, api.get_route(TOPIC))
            if resp.code == 0:
                route = api.parse_route(resp, cluster.namesrv_addr)
                addrs = {b.broker_name: b.broker_addrs for b in route.broker_datas}
                if addrs.get("broker-a", {}).get(MASTER_ID) == moved.addr:
                    return moved
            await asyncio.sleep(0.1)


async def max_offset(admin: RemotingClient, addr: str, queue_id: int) -> int:
    resp = await admin.invoke(addr, api.queue_request(C.GET_MAX_OFFSET, TOPIC, queue_id))
    return api.parse_offset(resp, addr)


async def test_an_ordered_producer_follows_the_master_to_its_new_address(
    cluster: Cluster,
) -> None:
    """Sends pinned to broker-a's queue 0 (sendSelectImpl: one try, no other broker to fall
    back on): after the move, the first sends fail, each asking for the route again; within
    a few of them the producer holds the new address and its sends land there -- before the
    30 s poll could have run (the test ends well within it)."""
    async with RemotingClient() as admin:
        old = cluster.brokers["broker-a"]
        assert (await admin.invoke(old.addr, create_topic(TOPIC, 2))).code == 0
        queue = MessageQueue(TOPIC, "broker-a", 0)
        async with Producer("pg_switch", namesrv_addr=cluster.namesrv_addr,
                            instance_name="switch_producer") as producer:  # fmt: skip
            first = await producer.send(Message(TOPIC, b"before"), queue=queue)
            assert first.status is SendStatus.SEND_OK
            instance = producer.instance
            assert instance.brokers["broker-a"][MASTER_ID] == old.addr
            moved = await move_master(cluster, admin)
            failures = 0
            async with asyncio.timeout(20):
                while True:
                    try:
                        after = await producer.send(Message(TOPIC, b"after"), queue=queue)
                        break
                    except MQClientError:
                        failures += 1
                        await asyncio.sleep(0.1)
            assert after.status is SendStatus.SEND_OK
            assert instance.brokers["broker-a"][MASTER_ID] == moved.addr
            assert instance.route_refreshes >= 1  # a failure asked, not the 30 s poll
            print(f"failed sends before the switch: {failures}, "
                  f"route fetches asked for: {instance.route_refreshes}")  # fmt: skip
        assert await max_offset(admin, moved.addr, 0) == 1  # "after" is on the new master


async def test_a_push_consumer_follows_the_master_to_its_new_address(cluster: Cluster) -> None:
    """A push consumer reading broker-a's queues: after the move its pulls fail at the old
    address, it fetches the route again and pulls (and commits offsets) at the new one: a
    message sent there is consumed, and the new master holds the group's offset for it."""
    got: list[bytes] = []

    async def listener(msgs: list[MessageExt], _ctx: object) -> ConsumeStatus:
        got.extend(m.body for m in msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    async with RemotingClient() as admin:
        old = cluster.brokers["broker-a"]
        assert (await admin.invoke(old.addr, create_topic(TOPIC, 2))).code == 0
        consumer = PushConsumer(
            "cg_switch", namesrv_addr=cluster.namesrv_addr, instance_name="switch_consumer",
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            persist_consumer_offset_interval=300,
        )  # fmt: skip
        consumer.subscribe(TOPIC, "*")
        consumer.register_message_listener(listener)
        async with consumer:
            async with Producer("pg_switch2", namesrv_addr=cluster.namesrv_addr,
                                instance_name="switch_producer2") as producer:  # fmt: skip
                await producer.send(
                    Message(TOPIC, b"before"), queue=MessageQueue(TOPIC, "broker-a", 0)
                )
            await wait_until(lambda: b"before" in got, 20)
            instance = consumer.instance
            moved = await move_master(cluster, admin)
            await wait_until(lambda: instance.brokers["broker-a"].get(MASTER_ID) == moved.addr, 20)
            assert instance.route_refreshes >= 1  # a failure asked, not the 30 s poll
            async with Producer("pg_switch3", namesrv_addr=cluster.namesrv_addr,
                                instance_name="switch_producer3") as producer:  # fmt: skip
                sent = await producer.send(
                    Message(TOPIC, b"after"), queue=MessageQueue(TOPIC, "broker-a", 1)
                )
            assert sent.status is SendStatus.SEND_OK
            await wait_until(lambda: b"after" in got, 20)
            query = api.query_consumer_offset("cg_switch", TOPIC, 1)
            async with asyncio.timeout(20):  # the commit reached the new master
                while (await admin.invoke(moved.addr, query)).ext_fields.get("offset") != "1":  # noqa: ASYNC110 -- state of another process
                    await asyncio.sleep(0.1)
