"""ali-ons 3.12.0, a real and independent RocketMQ client, against our cluster (issue 8;
protocol.md 14). Each scenario runs node scripts against a name server and two brokers."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter

import pytest

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.message import MessageExt, decode_records
from tests.broker.wire import heartbeat, max_offset, pull, send_v2
from tests.cluster import Cluster
from tests.compat.conftest import Node, create_everywhere
from tests.util import wait_until

pytestmark = [pytest.mark.compat, pytest.mark.slow]


async def pull_all(
    cli: RemotingClient, cluster: Cluster, topic: str, queues: int
) -> list[MessageExt]:
    """Every stored message of ``topic``, by raw PULL_MESSAGE on every broker and queue."""
    out: list[MessageExt] = []
    for broker in cluster.brokers.values():
        await cli.invoke(broker.addr, heartbeat("127.0.0.1@raw", "raw_reader", (topic, "*")))
        for qid in range(queues):
            offset = 0
            while True:
                resp = await cli.invoke(
                    broker.addr, pull("raw_reader", topic, qid, offset, sys_flag=0)
                )
                if resp.code != 0:
                    break
                out.extend(decode_records(resp.body))
                offset = int(resp.ext_fields["nextBeginOffset"])
    return out


async def test_ali_ons_producer_messages_read_back_intact(
    compat_cluster: Cluster, admin: RemotingClient
) -> None:
    """Issue 8: 1,000 messages sent by the ali-ons producer (tags, keys, a user property) to a
    topic made with UPDATE_AND_CREATE_TOPIC are all readable by a raw pull, intact."""
    await create_everywhere(admin, compat_cluster, "CompatSend", 4)
    producer = await Node.start(
        "produce.js", compat_cluster.namesrv_addr, "CompatSend", "1000", "--run=p1"
    )
    assert await producer.wait() == 0, producer.stderr.decode()[-2000:]
    sent = {m["body"]: m for m in producer.messages}
    assert len(sent) == 1000 and all(m.get("status") == "SEND_OK" for m in sent.values())
    assert {m["broker"] for m in sent.values()} == {"broker-a", "broker-b"}
    stored = {m.body.decode(): m for m in await pull_all(admin, compat_cluster, "CompatSend", 4)}
    assert stored.keys() == sent.keys()
    for body, msg in stored.items():
        i = int(body.split(":")[1])
        assert (msg.tags, msg.keys) == (f"tag{i % 3}", [f"key-{i}", f"alt-p1-{i}"])
        assert msg.properties["customProp"] == f"value-{i}"
        assert msg.msg_id == sent[body]["msgId"]  # ali-ons reports the offsetMsgId
        # ali-ons passes the response header's queueId through as text
        assert (msg.queue_id, msg.queue_offset) == (
            int(sent[body]["queueId"]),
            sent[body]["queueOffset"],
        )


async def test_ali_ons_push_consumer_gets_raw_sends(
    compat_cluster: Cluster, admin: RemotingClient
) -> None:
    """Issue 8: messages sent by a raw SEND_MESSAGE_V2 reach an ali-ons push consumer with the
    right msgId, tags, keys, properties, queue offsets and timestamps; its committed offsets
    show in QUERY_CONSUMER_OFFSET."""
    await create_everywhere(admin, compat_cluster, "CompatPush", 2)
    broker = compat_cluster.brokers["broker-a"]
    sent: dict[str, dict[str, str]] = {}
    born = time.time_ns() // 1_000_000
    for i in range(40):
        props = {
            "TAGS": f"t{i % 2}",
            "KEYS": f"k{i} x{i}",
            "colour": "blue",
            "UNIQ_KEY": f"U{i:031d}",
        }
        cmd = send_v2(
            "CompatPush", f"raw-{i}".encode(), queue_id=i % 2, props=props, g=str(born + i)
        )
        resp = await admin.invoke(broker.addr, cmd)
        assert resp.code == 0, resp.remark
        sent[f"raw-{i}"] = resp.ext_fields
    consumer = await Node.start(
        "consume.js",
        compat_cluster.namesrv_addr,
        "CompatPush",
        "compat_push",
        "--expect=40",
        "--idle-ms=2000",
    )
    assert await consumer.wait() == 0, consumer.stderr.decode()[-2000:]
    got = {m["body"]: m for m in consumer.messages}
    assert got.keys() == sent.keys()
    for body, msg in got.items():
        i, ext = int(body.split("-")[1]), sent[body]
        assert (msg["msgId"], msg["tags"], msg["keys"]) == (ext["msgId"], f"t{i % 2}", f"k{i} x{i}")
        assert msg["props"]["colour"] == "blue" and msg["props"]["UNIQ_KEY"] == f"U{i:031d}"
        assert (msg["queueId"], msg["queueOffset"]) == (
            int(ext["queueId"]),
            int(ext["queueOffset"]),
        )
        assert msg["bornTimestamp"] == born + i and msg["storeTimestamp"] >= born
    for qid in (0, 1):
        ask = RemotingCommand.request(
            C.QUERY_CONSUMER_OFFSET,
            {"consumerGroup": "compat_push", "topic": "CompatPush", "queueId": str(qid)},
        )
        resp = await admin.invoke(broker.addr, ask)
        assert resp.code == 0 and int(resp.ext_fields["offset"]) == 20


async def test_failed_message_is_redelivered_through_retry(
    compat_cluster: Cluster, admin: RemotingClient
) -> None:
    """Issue 8 / protocol.md 12.2: a message whose handler throws is sent back (36) and comes
    again through %RETRY%<group>, with its original topic restored and reconsumeTimes 1."""
    await create_everywhere(admin, compat_cluster, "CompatRetry", 2)
    broker = compat_cluster.brokers["broker-b"]
    for i in range(5):
        await admin.invoke(broker.addr, send_v2("CompatRetry", f"job-{i}".encode(), queue_id=i % 2))
    consumer = await Node.start(
        "consume.js",
        compat_cluster.namesrv_addr,
        "CompatRetry",
        "compat_retry",
        "--expect=5",
        "--fail=job-3",
        "--idle-ms=4000",
        "--max-ms=45000",
    )
    assert await consumer.wait(timeout=60) == 0, consumer.stderr.decode()[-2000:]
    deliveries = [m for m in consumer.messages if m["body"] == "job-3"]
    assert len(deliveries) == 2, deliveries
    first, again = deliveries
    assert (first["reconsumeTimes"], again["reconsumeTimes"]) == (0, 1)
    assert again["topic"] == "CompatRetry"  # restored from RETRY_TOPIC
    assert again["props"]["RETRY_TOPIC"] == "CompatRetry"
    assert sorted({m["body"] for m in consumer.messages}) == [f"job-{i}" for i in range(5)]


async def test_two_consumers_split_the_queues(
    compat_cluster: Cluster, admin: RemotingClient
) -> None:
    """Issue 8 / protocol.md 12.6: two ali-ons consumers of one group divide the queues
    (disjoint shares) and together receive every message once."""
    await create_everywhere(admin, compat_cluster, "CompatSplit", 4)
    args = (
        compat_cluster.namesrv_addr,
        "CompatSplit",
        "compat_split",
        "--idle-ms=4000",
        "--max-ms=40000",
    )
    consumers = [await Node.start("consume.js", *args) for _ in range(2)]
    for c in consumers:
        await c.ready()

    async def members() -> int:
        ask = RemotingCommand.request(
            C.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "compat_split"}
        )
        resp = await admin.invoke(compat_cluster.brokers["broker-a"].addr, ask)
        return len(json.loads(resp.body)["consumerIdList"]) if resp.code == 0 else 0

    deadline = time.monotonic() + 20
    while await members() < 2:
        assert time.monotonic() < deadline, "both consumers should join the group"
        await asyncio.sleep(0.1)
    await asyncio.sleep(3)  # a few 1 s rebalance rounds: shares settle before anything is sent
    producer = await Node.start(
        "produce.js", compat_cluster.namesrv_addr, "CompatSplit", "200", "--run=s1"
    )
    assert await producer.wait() == 0
    codes = [await c.wait(timeout=60) for c in consumers]
    assert codes == [0, 0], [c.stderr.decode()[-1000:] for c in consumers]
    bodies = Counter(m["body"] for c in consumers for m in c.messages)
    assert set(bodies) == {f"s1:{i}" for i in range(200)} and set(bodies.values()) == {1}
    shares = [{(m["storeHost"], m["queueId"]) for m in c.messages} for c in consumers]
    assert shares[0] and shares[1] and not shares[0] & shares[1]


async def test_producer_moves_on_when_a_broker_stops(
    compat_cluster: Cluster, admin: RemotingClient
) -> None:
    """Issue 8: a broker stopped mid-stream -- the ali-ons producer keeps sending, to the other
    broker, and every send succeeds."""
    await create_everywhere(admin, compat_cluster, "CompatFailover", 4)
    producer = await Node.start(
        "produce.js",
        compat_cluster.namesrv_addr,
        "CompatFailover",
        "200",
        "--run=f1",
        "--interval=25",
    )
    await wait_until(lambda: len(producer.messages) >= 40, timeout=30)
    await asyncio.to_thread(compat_cluster.stop_broker, "broker-a")
    stopped_at = len(producer.messages)
    assert await producer.wait(timeout=90) == 0, producer.stderr.decode()[-2000:]
    results = producer.messages
    assert len(results) == 200 and all(r.get("status") == "SEND_OK" for r in results), [
        r for r in results if r.get("status") != "SEND_OK"
    ]
    after = results[stopped_at + 5 :]
    assert after and {r["broker"] for r in after} == {"broker-b"}
    assert await max_offset(admin, compat_cluster.brokers["broker-b"].addr, "CompatFailover", 0) > 0


async def test_a_mixed_group_of_ali_ons_and_our_consumer_shares_queues(
    compat_cluster: Cluster, admin: RemotingClient
) -> None:
    """Issue 15 / protocol.md 12.6: an ali-ons consumer and a client.PushConsumer in one group
    allocate the same way (AllocateMessageQueueAveragely over the sorted ids and queues):
    disjoint shares, every message consumed once, by whichever side owns its queue."""
    from aiorocketmq.client import ConsumeStatus, PushConsumer

    await create_everywhere(admin, compat_cluster, "CompatMixed", 4)
    args = (compat_cluster.namesrv_addr, "CompatMixed", "compat_mixed")
    node = await Node.start("consume.js", *args, "--idle-ms=5000", "--max-ms=60000")
    await node.ready()
    ours: list[MessageExt] = []

    async def listener(msgs: list[MessageExt], ctx: object) -> ConsumeStatus:
        ours.extend(msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer("compat_mixed", namesrv_addr=compat_cluster.namesrv_addr,
                            rebalance_interval=1000, poll_name_server_interval=1000)  # fmt: skip
    consumer.subscribe("CompatMixed", "*")
    consumer.register_message_listener(listener)
    async with consumer:

        async def members() -> int:
            ask = RemotingCommand.request(
                C.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "compat_mixed"}
            )
            resp = await admin.invoke(compat_cluster.brokers["broker-a"].addr, ask)
            return len(json.loads(resp.body)["consumerIdList"]) if resp.code == 0 else 0

        deadline = time.monotonic() + 20
        while await members() < 2:
            assert time.monotonic() < deadline, "both consumers should join the group"
            await asyncio.sleep(0.1)
        await asyncio.sleep(3)  # a few 1 s rebalance rounds on both sides
        mine = {(mq.broker_name, mq.queue_id) for mq in consumer.rebalance.table
                if mq.topic == "CompatMixed"}  # fmt: skip
        assert len(mine) == 4, mine  # 8 queues over 2 consumers
        producer = await Node.start(
            "produce.js", compat_cluster.namesrv_addr, "CompatMixed", "200", "--run=x1"
        )
        assert await producer.wait() == 0
        assert await node.wait(timeout=60) == 0, node.stderr.decode()[-1000:]
        await wait_until(lambda: len(ours) + len(node.messages) >= 200, 10)
    bodies = Counter([m.body.decode() for m in ours] + [m["body"] for m in node.messages])
    assert set(bodies) == {f"x1:{i}" for i in range(200)} and set(bodies.values()) == {1}
    brokers = {b.addr.rsplit(":", 1)[1]: name for name, b in compat_cluster.brokers.items()}
    theirs = {(brokers[m["storeHost"].rsplit(":", 1)[1]], m["queueId"]) for m in node.messages}
    assert ours and theirs and not theirs & mine
    assert {(m.broker_name, m.queue_id) for m in ours} <= mine
