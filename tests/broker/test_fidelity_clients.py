"""Fidelity to 4.9.8 on what Java consumers see (issue 13; fidelity.md D1, D4, Top-7 and the
retry-topic registration), against real processes with JSON headers as Java clients send."""

from __future__ import annotations

import asyncio
import json
import signal
import time

from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ClientConfig
from aiorocketmq.remoting.dispatch import Route
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.codes import SerializeType
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.heartbeat import ConsumerData, HeartbeatData, SubscriptionData
from aiorocketmq.remoting.protocol.message import decode_records
from aiorocketmq.remoting.protocol.msgid import parse_offset_msg_id
from tests.broker.wire import create_topic, pull, route, send_v2
from tests.cluster import Cluster


def java_client() -> RemotingClient:
    return RemotingClient(ClientConfig(serialize_type=SerializeType.JSON))


def heartbeat(client_id: str, group: str, topic: str, expr: str, version: int) -> RemotingCommand:
    sub = SubscriptionData.build(topic, expr, sub_version=version)
    data = HeartbeatData(
        client_id=client_id, consumers=[ConsumerData(group_name=group, subscriptions=[sub])]
    )
    return RemotingCommand.request(C.HEART_BEAT, {}, data.encode())


def versioned_pull(group: str, topic: str, version: int) -> RemotingCommand:
    cmd = pull(group, topic, 0, 0, sys_flag=0, suspend_ms=0)
    cmd.ext_fields["subVersion"] = str(version)
    return cmd


async def test_d1_an_older_sub_version_never_replaces_a_newer_one(cluster: Cluster) -> None:
    """fidelity D1 (ConsumerGroupInfo.updateSubscription): two members of one group heartbeat
    different subVersions; the last heartbeat, carrying the older one, must not replace the
    group's subscription, so the newer member's pulls are served, not answered
    SUBSCRIPTION_NOT_LATEST. A member's newer version does replace it."""
    b = cluster.add_broker("broker-a")
    async with java_client() as a, java_client() as other:
        assert (await a.invoke(b.addr, create_topic("SubV", 1))).code == 0
        assert (await a.invoke(b.addr, send_v2("SubV", b"m", queue_id=0))).code == 0
        assert (await a.invoke(b.addr, heartbeat("10.0.0.1@a", "sv", "SubV", "*", 2000))).code == 0
        assert (
            await other.invoke(b.addr, heartbeat("10.0.0.2@b", "sv", "SubV", "TagB", 1000))
        ).code == 0
        newest = await a.invoke(b.addr, versioned_pull("sv", "SubV", 2000))
        assert newest.code == R.SUCCESS, (newest.code, newest.remark)
        assert [m.body for m in decode_records(newest.body)] == [b"m"]  # still "*", not TagB
        assert (
            await other.invoke(b.addr, heartbeat("10.0.0.2@b", "sv", "SubV", "*", 3000))
        ).code == 0
        # the newer member's version replaces it: its pulls are served, a version newer than
        # any heartbeat is not (PullMessageProcessor: group's subVersion < request's -> 25)
        assert (await other.invoke(b.addr, versioned_pull("sv", "SubV", 3000))).code == 0
        ahead = await a.invoke(b.addr, versioned_pull("sv", "SubV", 4000))
        assert ahead.code == R.SUBSCRIPTION_NOT_LATEST, ahead.remark


async def test_d4_a_dead_letter_queue_can_be_pulled(cluster: Cluster) -> None:
    """fidelity D4: %DLQ%<group> is created read+write (6), as 4.9.4+ do, so a consumer
    pulls dead letters and the name server routes the DLQ with perm 6."""
    b = cluster.add_broker("broker-a")
    async with java_client() as cli:
        await cli.invoke(b.addr, create_topic("DeadT", 1))
        sent = await cli.invoke(b.addr, send_v2("DeadT", b"poison", queue_id=0))
        back = RemotingCommand.request(
            C.CONSUMER_SEND_MSG_BACK,
            {
                "offset": str(parse_offset_msg_id(sent.ext_fields["msgId"])[1]),
                "group": "dg",
                "delayLevel": "0",
                "originMsgId": sent.ext_fields["msgId"],
                "originTopic": "DeadT",
                "unitMode": "false",
                "maxReconsumeTimes": "0",
            },
        )
        answer = await cli.invoke(b.addr, back)
        assert answer.code == R.SUCCESS, answer.remark
        dead = await cli.invoke(b.addr, pull("dg", "%DLQ%dg", 0, 0, sys_flag=4, subscription="*"))
        assert dead.code == R.SUCCESS, (dead.code, dead.remark)
        assert [m.body for m in decode_records(dead.body)] == [b"poison"]
        found = await route(cli, cluster.namesrv_addr, "%DLQ%dg")
        assert found.code == 0, found.remark
        assert [q["perm"] for q in json.loads(found.body)["queueDatas"]] == [6]


async def test_retry_topic_is_routed_before_the_heartbeat_is_answered(cluster: Cluster) -> None:
    """issue 13 item 6 (ClientManageProcessor.heartBeat -> createTopicInSendMessageBackMethod
    registers with the name servers inline): once the first heartbeat of a group is
    answered, the name server already routes %RETRY%<group>, so a Java consumer's first
    rebalance sees the retry queue."""
    b = cluster.add_broker("broker-a", registerNameServerPeriod="30000")
    async with java_client() as cli:
        for n in range(5):
            group = f"fresh{n}"
            hb = heartbeat(f"10.0.0.9@{n}", group, "AnyT", "*", 1)
            assert (await cli.invoke(b.addr, hb)).code == 0
            found = await route(cli, cluster.namesrv_addr, f"%RETRY%{group}")
            assert found.code == 0, (group, found.code, found.remark)


async def test_a_new_group_is_notified_only_once_its_retry_topic_is_routed(
    cluster: Cluster,
) -> None:
    """issue 33, difference 1 (ClientManageProcessor.heartBeat: createTopicInSendMessageBackMethod
    registers %RETRY%<group> with the name servers before registerConsumer notifies): with
    the name server stopped, the broker has made a new group's retry topic but cannot route it
    yet, and must not have told the group to rebalance; once the name server answers, the
    notice comes, and at that moment the name server routes the retry topic. Notified first
    (as before), a Java consumer's rebalance missed the retry queue until the next one, 20 s
    later. Every answer of the polls below travels the connection the notice comes on, after
    any notice written before it."""
    b = cluster.add_broker(
        "broker-a", registerNameServerPeriod="60000", registerBrokerTimeoutMills="120000"
    )
    group = "freshnotified"
    notices: asyncio.Queue[RemotingCommand] = asyncio.Queue()

    def on_notice(cmd: RemotingCommand, ch: Channel) -> None:
        notices.put_nowait(cmd)

    member = RemotingClient(
        ClientConfig(serialize_type=SerializeType.JSON),
        routes={C.NOTIFY_CONSUMER_IDS_CHANGED: Route(on_notice)},
    )
    async with java_client() as cli, member:
        deadline = time.monotonic() + 30
        while (await route(cli, cluster.namesrv_addr, "TBW102")).code != 0:
            assert time.monotonic() < deadline, "the broker never registered"
            await asyncio.sleep(0.05)
        ns = cluster.ns.proc
        ns.send_signal(signal.SIGSTOP)
        try:
            hb = asyncio.ensure_future(
                member.invoke(b.addr, heartbeat("10.0.0.9@n", group, "AnyT", "*", 1), 120)
            )
            topics = RemotingCommand.request(C.GET_ALL_TOPIC_CONFIG, {})
            deadline = time.monotonic() + 30
            while f"%RETRY%{group}" not in (await member.invoke(b.addr, topics)).body.decode():
                assert time.monotonic() < deadline, "the retry topic was never made"
                assert not hb.done()
                await asyncio.sleep(0.05)
            assert notices.empty(), "notified before the retry topic was routed"
        finally:
            ns.send_signal(signal.SIGCONT)
        notice = await asyncio.wait_for(notices.get(), 60)
        found = await route(cli, cluster.namesrv_addr, f"%RETRY%{group}")
        assert notice.ext_fields == {"consumerGroup": group}
        assert found.code == 0, (found.code, found.remark)
        assert (await hb).code == R.SUCCESS


async def test_auto_created_topic_is_routed_before_the_send_is_answered(
    cluster: Cluster,
) -> None:
    """TopicConfigManager.createTopicInSendMessageMethod registers inline: once the send that
    created a topic from TBW102 is answered, the name server routes it (the periodic
    registration is 30 s away here)."""
    b = cluster.add_broker("broker-a", registerNameServerPeriod="30000")
    async with java_client() as cli:
        for n in range(5):
            sent = await cli.invoke(b.addr, send_v2(f"Auto{n}", b"x"))
            assert sent.code == R.SUCCESS, sent.remark
            found = await route(cli, cluster.namesrv_addr, f"Auto{n}")
            assert found.code == 0, (n, found.code, found.remark)


async def test_vip_port_serves_all_but_pulls(cluster: Cluster) -> None:
    """fidelity Top-7 (BrokerController: fastListenPort = listenPort - 2, every processor but
    PULL_MESSAGE, same client housekeeping): a pre-4.5 Java client sends and heartbeats on
    port - 2; a pull there is refused with REQUEST_CODE_NOT_SUPPORTED; a consumer whose VIP
    connection closes leaves its group."""
    b = cluster.add_broker("broker-a")
    vip = f"127.0.0.1:{b.port - 2}"
    async with java_client() as cli, java_client() as main:
        assert (await cli.invoke(vip, create_topic("VipT", 1))).code == 0
        sent = await cli.invoke(vip, send_v2("VipT", b"fast", queue_id=0))
        assert sent.code == R.SUCCESS, sent.remark
        assert (await cli.invoke(vip, heartbeat("10.0.0.3@v", "vg", "VipT", "*", 1))).code == 0
        refused = await cli.invoke(vip, pull("vg", "VipT", 0, 0, sys_flag=0, suspend_ms=0))
        assert refused.code == R.REQUEST_CODE_NOT_SUPPORTED
        assert refused.remark == " request type 11 not supported"
        got = await main.invoke(b.addr, pull("vg", "VipT", 0, 0, sys_flag=0, suspend_ms=0))
        assert [m.body for m in decode_records(got.body)] == [b"fast"]
        members = RemotingCommand.request(C.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "vg"})
        assert json.loads((await main.invoke(b.addr, members)).body)["consumerIdList"] == [
            "10.0.0.3@v"
        ]
        cli.close_channel(vip)
        for _ in range(50):
            if (await main.invoke(b.addr, members)).code != R.SUCCESS:
                break
            await asyncio.sleep(0.05)
        assert (await main.invoke(b.addr, members)).code == R.SYSTEM_ERROR
