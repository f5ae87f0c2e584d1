"""What admins learn from a running client.PushConsumer through a broker (fidelity D5, §3.3;
issue 15 item 6): GET_CONSUMER_RUNNING_INFO (307), CONSUME_MESSAGE_DIRECTLY (309) and
INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223 -> 221), each answered with the body shapes Java's
mqadmin parses (fastjson, MessageQueue object keys)."""

from __future__ import annotations

import json

from aiorocketmq.client import ConsumeStatus, Message, MessageExt, Producer, PushConsumer
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ClientConfig
from aiorocketmq.remoting.protocol import fastjson
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import SerializeType
from aiorocketmq.remoting.protocol.command import RemotingCommand
from tests.client.conftest import create_everywhere
from tests.client.test_push import FAST
from tests.client.test_push import cluster as cluster  # the fixture
from tests.cluster import Cluster
from tests.util import wait_until


async def test_admin_requests_reach_the_push_consumer(cluster: Cluster) -> None:
    """fidelity D5: the broker forwards 307 / 309 / 221 and our consumer answers them."""
    await create_everywhere(cluster, "PushAdmin", 2)
    got: list[MessageExt] = []

    async def listener(msgs: list[MessageExt], ctx: object) -> ConsumeStatus:
        got.extend(msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    c = PushConsumer("cg_admin", namesrv_addr=cluster.namesrv_addr, **FAST)
    c.subscribe("PushAdmin", "TagA")
    c.register_message_listener(listener)
    broker = cluster.brokers["broker-a"].addr
    async with (
        c,
        Producer("pg_admin", namesrv_addr=cluster.namesrv_addr) as p,
        RemotingClient(ClientConfig(serialize_type=SerializeType.JSON)) as admin,
    ):
        await wait_until(lambda: len(c.rebalance.table) >= 4, 10)
        sent = await p.send(Message("PushAdmin", b"hello", tags="TagA"))
        await wait_until(lambda: len(got) == 1, 20)
        await wait_until(lambda: sum(c.offsets.table.values()) == 1, 10)
        cid = c.instance.client_id

        info = await admin.invoke(broker, RemotingCommand.request(
            C.GET_CONSUMER_RUNNING_INFO,
            {"consumerGroup": "cg_admin", "clientId": cid, "jstackEnable": "false"},
        ), timeout=15)  # fmt: skip
        assert info.code == 0, info.remark
        body = fastjson.loads(info.body)
        assert body["properties"]["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
        assert body["properties"]["PROP_CONSUMEORDERLY"] == "false"
        subs = {s["topic"]: s for s in body["subscriptionSet"]}
        assert subs["PushAdmin"]["subString"] == "TagA" and "%RETRY%cg_admin" in subs
        queues = {dict(k)["topic"]: v for k, v in body["mqTable"].items()}  # object keys
        assert "PushAdmin" in queues and "commitOffset" in queues["PushAdmin"]
        assert b'"mqTable":{{"brokerName":' in info.body  # written as fastjson writes it

        direct = await admin.invoke(_store(cluster, sent.queue.broker_name),
                                    RemotingCommand.request(C.CONSUME_MESSAGE_DIRECTLY, {
            "consumerGroup": "cg_admin", "clientId": cid, "msgId": sent.offset_msg_id,
        }), timeout=15)  # fmt: skip
        assert direct.code == 0, direct.remark
        result = json.loads(direct.body)
        assert result["consumeResult"] == "CR_SUCCESS" and result["order"] is False
        assert [m.body for m in got] == [b"hello", b"hello"]  # the listener saw it again

        status = await admin.invoke(_store(cluster, sent.queue.broker_name),
                                    RemotingCommand.request(
            C.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, {"topic": "PushAdmin", "group": "cg_admin"},
        ), timeout=15)  # fmt: skip
        assert status.code == 0, status.remark
        table = fastjson.loads(status.body)["consumerTable"][cid]
        offsets = {(dict(k)["brokerName"], dict(k)["queueId"]): v for k, v in table.items()}
        assert sum(offsets.values()) == 1 and len(offsets) == 4


def _store(cluster: Cluster, broker_name: str) -> str:
    return cluster.brokers[broker_name].addr
