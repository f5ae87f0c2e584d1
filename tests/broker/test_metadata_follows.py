"""Metadata keeps up with the data (issue 35 item 5; r#9804): a topic, subscription group or
consumer offset a SYNC_MASTER acknowledged is on its slave when the master dies at once --
copied with the HA stream (broker/meta_stream.py), not on the 10 s slaveSyncInterval timer.

The SYNC_MASTER tests kill the master (SIGKILL) right after the acknowledgement, with the
timer left at 4.9.8's 10 s: only what came with the stream can be on the slave. The others:
a oneway commit on an ASYNC_MASTER reaches the slave with the stream; a 4.9.8-style master
(no records) is still copied on the timer.
"""

from __future__ import annotations

import asyncio

from aiorocketmq.client import (
    ConsumeFromWhere,
    ConsumeStatus,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
    SendStatus,
)
from aiorocketmq.client.consumer.types import PushOptions
from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ServerConfig
from aiorocketmq.remoting.dispatch import Route
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from aiorocketmq.remoting.protocol.register import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfigWrapper,
)
from aiorocketmq.remoting.protocol.route import dumps
from aiorocketmq.remoting.protocol.topic import TopicConfig
from aiorocketmq.remoting.server import RemotingServer
from tests.broker.wire import create_topic, send_v2
from tests.cluster import BrokerProc, Cluster
from tests.util import wait_until

# the timer as 4.9.8 has it: 10 s; the tests finish their acknowledged step well before a
# round could copy anything, and the master is dead by then
SLAVE = {"brokerName": "broker-a", "brokerId": "1", "brokerRole": "SLAVE",
         "haSendHeartbeatInterval": "1000", "slaveSyncInterval": "10000"}  # fmt: skip
FAST: PushOptions = {
    "rebalance_interval": 1000,
    "poll_name_server_interval": 500,
    "heartbeat_broker_interval": 1000,
    "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
}


async def sync_pair(cluster: Cluster, cli: RemotingClient) -> tuple[BrokerProc, BrokerProc]:
    """A SYNC_MASTER and its slave, the slave connected (a send answers SEND_OK, not 11)."""
    master = cluster.add_broker("broker-a", brokerRole="SYNC_MASTER")
    slave = cluster.add_broker("broker-a-s", sets=SLAVE)
    async with asyncio.timeout(20):
        while (await cli.invoke(master.addr, send_v2("MetaWarm", b"w", queue_id=0))).code:  # noqa: ASYNC110 -- state of another process
            await asyncio.sleep(0.1)
    return master, slave


async def test_a_topic_created_just_before_the_master_died_is_read_from_the_slave(
    cluster: Cluster, client: RemotingClient
) -> None:
    """The issue's reproducer, as a new user meets it: create a topic on a SYNC_MASTER, send
    20 messages (SEND_OK: the slave holds them), SIGKILL the master at once, consume with a
    push consumer (findBrokerAddressInSubscribe falls back to the slave). Before: the slave
    answered ``topic[ReplTopic] not exist`` (17) to every pull and 0 of 20 were read."""
    master, _slave = await sync_pair(cluster, client)
    assert (await client.invoke(master.addr, create_topic("ReplTopic", 2))).code == 0
    async with Producer("pg_repl", namesrv_addr=cluster.namesrv_addr) as producer:
        for i in range(20):
            result = await producer.send(Message("ReplTopic", b"r%02d" % i))
            assert result.status is SendStatus.SEND_OK
    cluster.kill_broker("broker-a")
    got: set[bytes] = set()

    async def listener(msgs: list[MessageExt], _ctx: object) -> ConsumeStatus:
        got.update(m.body for m in msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer("cg_repl", namesrv_addr=cluster.namesrv_addr, **FAST)
    consumer.subscribe("ReplTopic", "*")
    consumer.register_message_listener(listener)
    async with consumer:
        await wait_until(lambda: len(got) >= 20, 30)
    assert got == {b"r%02d" % i for i in range(20)}


async def test_a_group_and_an_offset_acknowledged_by_a_sync_master_are_on_its_slave(
    cluster: Cluster, client: RemotingClient
) -> None:
    """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP and UPDATE_CONSUMER_OFFSET answered by a
    SYNC_MASTER, the master SIGKILLed at once: the slave knows the group's settings and the
    committed offset (no offset moves back past what the master acknowledged)."""
    master, slave = await sync_pair(cluster, client)
    assert (await client.invoke(master.addr, create_topic("MetaOff", 2))).code == 0
    group = api.request(C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None,
                        b'{"groupName":"cg_meta","retryMaxTimes":3}')  # fmt: skip
    assert (await client.invoke(master.addr, group)).code == 0
    where = {"consumerGroup": "cg_meta", "topic": "MetaOff", "queueId": "1"}
    for offset in (5, 7):
        commit = api.request(C.UPDATE_CONSUMER_OFFSET, {**where, "commitOffset": str(offset)})
        assert (await client.invoke(master.addr, commit)).code == 0
    cluster.kill_broker("broker-a")
    query = await client.invoke(slave.addr, api.request(C.QUERY_CONSUMER_OFFSET, where))
    assert query.code == ResponseCode.SUCCESS and query.ext_fields["offset"] == "7"
    groups = await client.invoke(
        slave.addr, RemotingCommand.request(C.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
    )
    assert b'"retryMaxTimes":3' in groups.body
    topics = await client.invoke(slave.addr, RemotingCommand.request(C.GET_ALL_TOPIC_CONFIG))
    assert b'"MetaOff"' in topics.body


async def test_a_deleted_topic_and_group_are_gone_from_the_slave(
    cluster: Cluster, client: RemotingClient
) -> None:
    """Deletions follow too: a topic and a group the slave knows, deleted on a SYNC_MASTER,
    are gone from the slave when the master dies right after."""
    master, slave = await sync_pair(cluster, client)
    assert (await client.invoke(master.addr, create_topic("MetaGone", 1))).code == 0
    group = api.request(C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None,
                        b'{"groupName":"cg_gone","retryMaxTimes":4}')  # fmt: skip
    assert (await client.invoke(master.addr, group)).code == 0
    all_topics = RemotingCommand.request(C.GET_ALL_TOPIC_CONFIG)
    all_groups = RemotingCommand.request(C.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
    async with asyncio.timeout(30):  # the slave has both (by any route: the timer's too)
        while (  # noqa: ASYNC110 -- state of another process
            b'"MetaGone"' not in (await client.invoke(slave.addr, all_topics)).body
            or b'"cg_gone"' not in (await client.invoke(slave.addr, all_groups)).body
        ):
            await asyncio.sleep(0.1)
    delete_topic = api.request(C.DELETE_TOPIC_IN_BROKER, {"topic": "MetaGone"})
    assert (await client.invoke(master.addr, delete_topic)).code == 0
    delete_group = api.request(C.DELETE_SUBSCRIPTIONGROUP, {"groupName": "cg_gone"})
    assert (await client.invoke(master.addr, delete_group)).code == 0
    cluster.kill_broker("broker-a")
    topics = await client.invoke(slave.addr, all_topics)
    assert topics.code == 0 and b'"MetaGone"' not in topics.body
    groups = await client.invoke(slave.addr, all_groups)
    assert groups.code == 0 and b'"cg_gone"' not in groups.body


async def test_offsets_committed_oneway_reach_an_async_masters_slave_with_the_stream(
    cluster: Cluster, client: RemotingClient
) -> None:
    """What consumers send (UPDATE_CONSUMER_OFFSET oneway, as Java's persistAll): no answer
    to wait for, so no promise at the ack -- but the commit reaches the slave with the stream
    (one offsets record per 100 ms at most), not at the next timer round: here the timer's
    first round (3 s after the slave starts) has run and the next is 10 minutes away."""
    master = cluster.add_broker("broker-a")  # ASYNC_MASTER
    slave = cluster.add_broker("broker-a-s", sets={**SLAVE, "slaveSyncInterval": "600000"})
    assert (await client.invoke(master.addr, create_topic("MetaOneway", 2))).code == 0
    assert slave.proc is not None
    await asyncio.to_thread(slave.proc.wait_for, "slave_topics_synced", 30)  # round one ran
    where = {"consumerGroup": "cg_oneway", "topic": "MetaOneway", "queueId": "0"}
    commit = api.request(C.UPDATE_CONSUMER_OFFSET, {**where, "commitOffset": "42"})
    await client.invoke_oneway(master.addr, commit)
    query = api.request(C.QUERY_CONSUMER_OFFSET, where)
    async with asyncio.timeout(30):
        while (await client.invoke(slave.addr, query)).ext_fields.get("offset") != "42":  # noqa: ASYNC110 -- state of another process
            await asyncio.sleep(0.1)


async def test_a_slave_of_a_4_9_8_master_takes_its_copies_on_the_timer(
    cluster: Cluster, client: RemotingClient
) -> None:
    """A 4.9.8 master writes no records and its answers carry no metaOffset: our slave takes
    its full copies as they come, every slaveSyncInterval, as before. The master here is a
    real server on a free port answering 21, 43, 45 and 201 as 4.9.8 does, registered with
    the name server as broker-a's master (brokerId 0)."""
    topics = TopicConfigWrapper(
        topic_config_table={"Old498": TopicConfig(topic_name="Old498", read_queue_nums=2,
                                                  write_queue_nums=2)},
        data_version=DataVersion(7, 1_700_000_000_000),
    )  # fmt: skip
    bodies: dict[int, bytes] = {
        C.GET_ALL_TOPIC_CONFIG: dumps(topics.to_json()),
        C.GET_ALL_CONSUMER_OFFSET: b'{"offsetTable":{"Old498@cg_old":{"0":9}}}',
        C.GET_ALL_DELAY_OFFSET: b'{"offsetTable":{}}',
        C.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: dumps({
            "dataVersion": {"counter": 3, "timestamp": 1_700_000_000_000},
            "subscriptionGroupTable": {"cg_old": {"groupName": "cg_old", "retryMaxTimes": 5}},
        }),
    }  # fmt: skip

    def answer(req: RemotingCommand, _ch: object) -> RemotingCommand:
        return response_to(req, ResponseCode.SUCCESS, body=bodies[req.code])

    config = ServerConfig(listen_port=0, bind_address="127.0.0.1")
    old = RemotingServer({code: Route(answer) for code in bodies}, config, announce=False)
    await old.start()
    try:
        register = api.request(C.REGISTER_BROKER, {
            "brokerName": "broker-a", "brokerAddr": f"127.0.0.1:{old.port}",
            "clusterName": "DefaultCluster", "haServerAddr": f"127.0.0.1:{old.port}",
            "brokerId": "0", "compressed": "false", "bodyCrc32": "0",
        }, RegisterBrokerBody(topic_config_wrapper=topics).encode())  # fmt: skip
        assert (await client.invoke(cluster.namesrv_addr, register)).code == 0
        slave = cluster.add_broker("broker-a-s", sets={**SLAVE, "slaveSyncInterval": "300"})
        where = {"consumerGroup": "cg_old", "topic": "Old498", "queueId": "0"}
        query = api.request(C.QUERY_CONSUMER_OFFSET, where)
        all_topics = RemotingCommand.request(C.GET_ALL_TOPIC_CONFIG)
        all_groups = RemotingCommand.request(C.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        async with asyncio.timeout(30):
            while (  # noqa: ASYNC110 -- state of another process
                (await client.invoke(slave.addr, query)).ext_fields.get("offset") != "9"
                or b'"Old498"' not in (await client.invoke(slave.addr, all_topics)).body
                or b'"retryMaxTimes":5' not in (await client.invoke(slave.addr, all_groups)).body
            ):
                await asyncio.sleep(0.1)
    finally:
        await old.close()
