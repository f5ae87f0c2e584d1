"""Fidelity rows D6, D9, D10, D14, D15 and §1.2 row 36 (issue 13 item 8): what a 4.9.8 client
or mqadmin can tell apart, checked against real processes over JSON headers, as Java sends."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import pytest

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ClientConfig
from aiorocketmq.remoting.dispatch import Route
from aiorocketmq.remoting.protocol import fastjson
from aiorocketmq.remoting.protocol.codes import LanguageCode, SerializeType
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.message import MessageExt, decode_records
from aiorocketmq.remoting.protocol.msgid import parse_offset_msg_id
from aiorocketmq.remoting.protocol.route import decode_topic_list
from tests.broker.wire import create_topic, heartbeat, max_offset, send_v2, view
from tests.cluster import BrokerProc, Cluster
from tests.util import FAQ

T = TypeVar("T")


def req(code: int, body: bytes = b"", /, **ext: str) -> RemotingCommand:
    return RemotingCommand.request(code, ext, body)


async def eventually(probe: Callable[[], Awaitable[T]], done: Callable[[T], bool]) -> T:
    """``await probe()`` every 50 ms until ``done`` says yes (5 s at most); the last result."""
    async with asyncio.timeout(5):
        while not done(result := await probe()):  # noqa: ASYNC110 -- state of another process
            await asyncio.sleep(0.05)
    return result


@pytest.fixture
def broker(cluster: Cluster) -> BrokerProc:
    return cluster.add_broker("broker-a")


class Consumer:
    """A consumer's own connection: it heartbeats and receives the broker's 220 notices."""

    def __init__(self) -> None:
        self.notices: asyncio.Queue[RemotingCommand] = asyncio.Queue()
        route = Route(lambda cmd, ch: self.notices.put_nowait(cmd))
        self.client = RemotingClient(
            ClientConfig(serialize_type=SerializeType.JSON),
            routes={C.RESET_CONSUMER_CLIENT_OFFSET: route},
        )

    async def join(self, addr: str, group: str, topic: str, version: int | None = None) -> None:
        beat = heartbeat(f"127.0.0.1@{group}", group, (topic, "*"))
        if version is not None:
            beat.version = version
        assert (await self.client.invoke(addr, beat)).code == 0


@pytest.fixture
async def consumer() -> AsyncIterator[Consumer]:
    c = Consumer()
    yield c
    await c.client.close()


async def _reset_setup(cli: RemotingClient, addr: str, *, offsets: dict[int, int]) -> None:
    """Topic RstT (2 queues, 3 messages each) and group rg's offsets on the queues given."""
    assert (await cli.invoke(addr, create_topic("RstT", 2))).code == 0
    for qid in (0, 1):
        for i in range(3):
            assert (await cli.invoke(addr, send_v2("RstT", b"%d" % i, queue_id=qid))).code == 0
    await _commit(cli, addr, offsets)


async def _commit(cli: RemotingClient, addr: str, offsets: dict[int, int]) -> None:
    for qid, offset in offsets.items():
        ext = {"consumerGroup": "rg", "topic": "RstT", "queueId": str(qid)}
        assert (await cli.invoke(addr, req(C.UPDATE_CONSUMER_OFFSET, commitOffset=str(offset),
                                           **ext))).code == 0  # fmt: skip


def _reset(language: LanguageCode = LanguageCode.JAVA, topic: str = "RstT") -> RemotingCommand:
    cmd = req(C.INVOKE_BROKER_TO_RESET_OFFSET, topic=topic, group="rg", timestamp="0",
              isForce="true")  # fmt: skip
    cmd.language = language
    return cmd


async def test_reset_refusals_match_broker2client(
    broker: BrokerProc, json_client: RemotingClient, consumer: Consumer
) -> None:
    """fidelity D6 (a), (b), (d): a topic the broker lacks, a queue the group has no offset
    on, nobody online, and a client older than V3_0_7_SNAPSHOT: Broker2Client.resetOffset's
    codes and remarks, and no notice sent."""
    addr = broker.addr
    missing = await json_client.invoke(addr, _reset(topic="NoSuchT"))
    assert (missing.code, missing.remark) == (1, "[reset-offset] reset offset failed, "
                                              "no topic in this broker. topic=NoSuchT")  # fmt: skip
    await _reset_setup(json_client, addr, offsets={0: 2})  # none on queue 1
    await consumer.join(addr, "rg", "RstT")
    partial = await json_client.invoke(addr, _reset())
    assert (partial.code, partial.remark) == (1, "THe consumer group <rg> not exist")
    await _commit(json_client, addr, {1: 2})
    await consumer.client.close()
    # once the broker has seen the connection close
    offline = await eventually(lambda: json_client.invoke(addr, _reset()), lambda r: r.code != 0)
    remark = "Consumer not online, so can not reset offset, Group: rg Topic: RstT Timestamp: 0"
    assert (offline.code, offline.remark) == (206, remark)
    old = Consumer()
    try:
        await old.join(addr, "rg", "RstT", version=27)  # V3_0_6
        refused = await json_client.invoke(addr, _reset())
        assert (refused.code, refused.remark) == (
            1, "the client does not support this feature. version=V3_0_6")  # fmt: skip
        await asyncio.sleep(0.3)
        assert old.notices.empty()
    finally:
        await old.client.close()


@pytest.mark.parametrize("language", [LanguageCode.JAVA, LanguageCode.CPP])
async def test_reset_notice_body_follows_the_admin_language(
    broker: BrokerProc, json_client: RemotingClient, consumer: Consumer, language: LanguageCode
) -> None:
    """fidelity D6 (c): the 220 notice carries ResetOffsetBodyForC (a list of MessageQueueForC,
    fastjson's field order) when the 222 request's language is CPP, the object-keyed
    ResetOffsetBody otherwise; the 222 response is ResetOffsetBody either way."""
    addr = broker.addr
    await _reset_setup(json_client, addr, offsets={0: 2, 1: 3})
    await consumer.join(addr, "rg", "RstT")
    resp = await json_client.invoke(addr, _reset(language))
    assert resp.code == 0, resp.remark
    table = fastjson.loads(resp.body)["offsetTable"]
    assert sorted(table.values()) == [0, 0] and len(table) == 2
    notice = await asyncio.wait_for(consumer.notices.get(), 5)
    assert notice.ext_fields == {
        "topic": "RstT", "group": "rg", "timestamp": "0", "isForce": "false"}  # fmt: skip
    if language == LanguageCode.CPP:
        assert notice.body == (
            b'{"offsetTable":[{"brokerName":"broker-a","offset":0,"queueId":0,"topic":"RstT"},'
            b'{"brokerName":"broker-a","offset":0,"queueId":1,"topic":"RstT"}]}'
        )
    else:
        assert fastjson.loads(notice.body) == fastjson.loads(resp.body)


async def test_retry_topic_from_the_template_and_unit_flags(
    broker: BrokerProc, json_client: RemotingClient
) -> None:
    """fidelity D9: a send to a missing %RETRY% topic creates it from TBW102, min(client's
    defaultTopicQueueNums, 8) queues, perm 6; unitMode sets TopicSysFlag UNIT_SUB on a retry
    topic and UNIT on others (AbstractSendMessageProcessor.msgCheck)."""
    addr = broker.addr
    sends = [("%RETRY%ug", 12, "false"), ("%RETRY%vg", 4, "true"), ("UnitT", 4, "true")]
    for topic, nums, unit in sends:
        resp = await json_client.invoke(addr, send_v2(topic, b"x", default_queue_nums=nums, k=unit))
        assert resp.code == 0, resp.remark
    table = json.loads((await json_client.invoke(addr, req(C.GET_ALL_TOPIC_CONFIG))).body)
    got = {t: table["topicConfigTable"][t] for t, _n, _u in sends}
    assert {t: (c["writeQueueNums"], c["perm"], c["topicSysFlag"]) for t, c in got.items()} == {
        "%RETRY%ug": (8, 6, 0), "%RETRY%vg": (4, 6, 2), "UnitT": (4, 6, 1)}  # fmt: skip


async def test_dlq_copy_keeps_the_clients_delay(
    broker: BrokerProc, json_client: RemotingClient
) -> None:
    """fidelity D10: a %RETRY% send past maxReconsumeTimes goes to %DLQ% after the DELAY the
    client set (4.9.8's origProps overwrite handleRetryAndDLQ's level 0)."""
    addr = broker.addr
    sent = await json_client.invoke(
        addr, send_v2("%RETRY%dg", b"late", props={"DELAY": "1"}, j="3", l="3")
    )
    assert sent.code == 0, sent.remark
    parked = await view(json_client, addr, sent.ext_fields["msgId"])
    assert (parked.topic, parked.properties["REAL_TOPIC"]) == ("SCHEDULE_TOPIC_XXXX", "%DLQ%dg")
    await eventually(lambda: max_offset(json_client, addr, "%DLQ%dg", 0), lambda n: n == 1)


async def test_exact_remarks(cluster: Cluster, json_client: RemotingClient) -> None:
    """fidelity D14: MESSAGE_ILLEGAL's limit in bytes; FAQ suffixes on the group-not-exist
    remarks of pull, send and send-back; startAcceptSendRequestTimeStamp in local time."""
    until = 4102444800123  # 2100-01-01, ms
    b = cluster.add_broker("broker-a", maxMessageSize="2048", autoCreateSubscriptionGroup="false",
                           startAcceptSendRequestTimeStamp=str(until))  # fmt: skip
    late = await json_client.invoke(b.addr, send_v2("Any", b"x"))
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(until / 1000)) + ",123"
    assert (late.code, late.remark) == (1, f"broker unable to service, until {when}")
    cluster.stop_broker("broker-a")
    b.sets.pop("startAcceptSendRequestTimeStamp")
    cluster.start_broker("broker-a")
    json_client.close_channel(b.addr)
    assert (await json_client.invoke(b.addr, create_topic("Known", 1))).code == 0
    big = await json_client.invoke(b.addr, send_v2("Known", b"x" * 2049, queue_id=0))
    assert (big.code, big.remark) == (13, (
        "the message is illegal, maybe msg body or properties length not matched. "
        "msg body length limit 2048B, msg properties length limit 32KB."))  # fmt: skip
    pull = req(C.PULL_MESSAGE, consumerGroup="ghost", topic="Known", queueId="0", queueOffset="0",
               maxMsgNums="1", sysFlag="0", commitOffset="0", suspendTimeoutMillis="0",
               subVersion="0")  # fmt: skip
    pulled = await json_client.invoke(b.addr, pull)
    assert (pulled.code, pulled.remark) == (26, "subscription group [ghost] does not exist, " + FAQ)
    back = await json_client.invoke(b.addr, req(C.CONSUMER_SEND_MSG_BACK, offset="0",
                                                group="ghost", delayLevel="0"))  # fmt: skip
    assert (back.code, back.remark) == (26, "subscription group not exist, ghost " + FAQ)


async def test_builtin_and_system_topics(
    cluster: Cluster, broker: BrokerProc, json_client: RemotingClient
) -> None:
    """fidelity D15: BenchmarkTest (1024 queues) and <cluster>_REPLY_TOPIC (1) exist from birth
    and reach the name server; updateTopic (17) refuses them and RMQ_SYS_TRACE_TOPIC as
    system topics (TopicValidator)."""
    table = json.loads((await json_client.invoke(broker.addr, req(C.GET_ALL_TOPIC_CONFIG))).body)
    configs = table["topicConfigTable"]
    bench, reply = configs["BenchmarkTest"], configs["DefaultCluster_REPLY_TOPIC"]
    assert (bench["readQueueNums"], bench["writeQueueNums"], bench["perm"]) == (1024, 1024, 6)
    assert (reply["readQueueNums"], reply["writeQueueNums"], reply["perm"]) == (1, 1, 6)
    wanted = {"BenchmarkTest", "DefaultCluster_REPLY_TOPIC"}
    topic_list = req(C.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
    await eventually(  # the broker's first registration
        lambda: json_client.invoke(cluster.namesrv_addr, topic_list),
        lambda r: wanted <= set(decode_topic_list(r.body)),
    )
    for topic in ("RMQ_SYS_TRACE_TOPIC", "DefaultCluster_REPLY_TOPIC", "BenchmarkTest"):
        resp = await json_client.invoke(broker.addr, create_topic(topic, 4))
        assert (resp.code, resp.remark) == (1, f"The topic[{topic}] is conflict with system topic.")


async def _send_back_copy(cli: RemotingClient, addr: str, delay_level: str) -> MessageExt:
    """Send a message to BackT, send it back as group bg; the copy, found by its key."""
    uniq = f"7F0000010000000000000000000{delay_level[-1]}"
    sent = await cli.invoke(addr, send_v2("BackT", b"m", queue_id=0, props={"UNIQ_KEY": uniq}))
    offset = parse_offset_msg_id(sent.ext_fields["msgId"])[1]
    back = await cli.invoke(addr, req(C.CONSUMER_SEND_MSG_BACK, offset=str(offset), group="bg",
                                      delayLevel=delay_level))  # fmt: skip
    assert back.code == 0, back.remark
    topic = "%DLQ%bg" if delay_level == "-1" else "SCHEDULE_TOPIC_XXXX"
    now = str(time.time_ns() // 1_000_000 + 60_000)
    found = await cli.invoke(addr, req(C.QUERY_MESSAGE, topic=topic, key=uniq, maxNum="4",
                                       beginTimestamp="0", endTimestamp=now))  # fmt: skip
    (copy,) = decode_records(found.body)
    return copy


async def test_send_back_copies_and_an_unwritable_retry_topic(
    broker: BrokerProc, json_client: RemotingClient
) -> None:
    """fidelity §1.2 row 36: every send-back copy stores WAIT=false, the DLQ copy DELAY=0
    (asyncConsumerSendMsgBack); a retry topic without the write perm answers NO_PERMISSION."""
    addr = broker.addr
    assert (await json_client.invoke(addr, create_topic("BackT", 1))).code == 0
    retry = await _send_back_copy(json_client, addr, "2")
    assert (retry.properties["WAIT"], retry.properties["DELAY"]) == ("false", "2")
    dead = await _send_back_copy(json_client, addr, "-1")
    assert (dead.topic, dead.properties["WAIT"], dead.properties["DELAY"]) == (
        "%DLQ%bg", "false", "0")  # fmt: skip
    assert (await json_client.invoke(addr, create_topic("%RETRY%bg", 1, perm=4))).code == 0
    refused = await json_client.invoke(addr, req(C.CONSUMER_SEND_MSG_BACK, offset="0",
                                                 group="bg", delayLevel="0"))  # fmt: skip
    assert (refused.code, refused.remark) == (
        16, "the topic[%RETRY%bg] sending message is forbidden")  # fmt: skip


async def test_broker_answers_an_unknown_code(
    broker: BrokerProc, json_client: RemotingClient
) -> None:
    """fidelity D19, the broker's half: unlike the name server, it answers 3 with
    AdminBrokerProcessor.getUnknownCmdResponse's remark."""
    resp = await json_client.invoke(broker.addr, req(9999))
    assert (resp.code, resp.remark) == (3, " request type 9999 not supported")
