"""Request-reply, the broker's side (issue 33 item 2; features.md 6.1): SEND_REPLY_MESSAGE (324)
and SEND_REPLY_MESSAGE_V2 (325) are taken as sends, pushed to the requester named by
REPLY_TO_CLIENT with PUSH_REPLY_MESSAGE_TO_CLIENT (326) over its own connection, stored in
``<cluster>_REPLY_TOPIC`` (storeReplyMessageEnable), and answered as 4.9.8's
ReplyMessageProcessor answers when the requester is not there.

The requesters are real connections: a RemotingClient that heartbeats a producer group and
answers each 326 it is sent."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest

from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ClientConfig
from aiorocketmq.remoting.dispatch import Route
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import SerializeType
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from aiorocketmq.remoting.protocol.headers.send import ReplyMessageRequestHeader
from aiorocketmq.remoting.protocol.message import Prop, decode_properties
from aiorocketmq.remoting.protocol.route import TopicRouteData
from tests.broker.wire import max_offset, send_v2, view
from tests.cluster import BrokerProc, Cluster, running

REPLY_TOPIC = "DefaultCluster_REPLY_TOPIC"
# ReplyMessageRequestHeader's fields, as 4.9.8 writes them
PUSH_KEYS = {"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId",
             "sysFlag", "bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode",
             "bornHost", "storeHost", "storeTimestamp"}  # fmt: skip


@pytest.fixture(scope="module")
def reply_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, BrokerProc]]:
    """One name server and one broker, shared: every test uses its own client ids."""
    with running(tmp_path_factory.mktemp("reply"), ("broker-r",)) as cluster:
        yield cluster, cluster.brokers["broker-r"]


@pytest.fixture
def broker(reply_cluster: tuple[Cluster, BrokerProc]) -> str:
    return reply_cluster[1].addr


class Requester:
    """A requester's connection: heartbeats producer group ``pg_req`` as ``client_id``,
    records the 326s it is pushed and answers each with ``code`` (none when ``silent``)."""

    def __init__(self, client_id: str, code: int = 0, *, silent: bool = False) -> None:
        self.client_id, self.code = client_id, code
        self.pushed: list[RemotingCommand] = []
        self.asked = asyncio.Event()
        handler = self._silent if silent else self._answer
        routes: dict[int, Route] = {C.PUSH_REPLY_MESSAGE_TO_CLIENT: Route(handler)}
        self.client = RemotingClient(ClientConfig(serialize_type=SerializeType.JSON), routes)

    def _answer(self, cmd: RemotingCommand, ch: object) -> RemotingCommand:
        self.pushed.append(cmd)
        self.asked.set()
        return response_to(cmd, self.code, None if self.code == 0 else "not taken")

    async def _silent(self, cmd: RemotingCommand, ch: object) -> RemotingCommand:
        self.pushed.append(cmd)
        self.asked.set()
        await asyncio.Event().wait()  # never answers; cancelled when the connection closes
        raise AssertionError("unreachable")

    async def join(self, addr: str) -> None:
        beat = api.heartbeat(self.client_id, producers=["pg_req"])
        assert (await self.client.invoke(addr, beat)).code == 0


@pytest.fixture
async def requesters() -> AsyncIterator[list[Requester]]:
    made: list[Requester] = []
    yield made
    for r in made:
        await r.client.close()


def reply(
    client_id: str | None, body: bytes, *, v2: bool = True, cid: str = "c-1"
) -> RemotingCommand:
    """What a replier sends: createReplyMessage's properties, as 325 (or 324)."""
    props = {Prop.MSG_TYPE: "reply", Prop.CORRELATION_ID: cid, Prop.TTL: "3000"}
    if client_id is not None:
        props[Prop.REPLY_TO_CLIENT] = client_id
    return api.send_message(REPLY_TOPIC, body, group="pg_replier", properties=props,
                            v2=v2, reply=True)  # fmt: skip


async def test_a_reply_is_pushed_to_its_requester_and_stored(
    broker: str, json_client: RemotingClient, requesters: list[Requester]
) -> None:
    """ReplyMessageProcessor: 325 and 324 are pushed (326) on the requester's connection with
    Java's header and PUSH_REPLY_TIME, answered 0, and stored as sent (no CLUSTER added,
    no PUSH_REPLY_TIME) with the stored msgId in the answer."""
    req = Requester("10.0.0.1@requester-1")
    requesters.append(req)
    await req.join(broker)
    before = await max_offset(json_client, broker, REPLY_TOPIC, 0)
    for v2, body in ((True, b"answer-v2"), (False, b"answer-v1")):
        resp = await json_client.invoke(broker, reply(req.client_id, body, v2=v2))
        assert (resp.code, resp.remark) == (0, None)
        assert resp.ext_fields["MSG_REGION"] == "DefaultRegion"
        stored = await view(json_client, broker, resp.ext_fields["msgId"])
        assert (stored.topic, stored.body) == (REPLY_TOPIC, body)
        assert stored.properties[Prop.CORRELATION_ID] == "c-1"
        assert Prop.CLUSTER not in stored.properties
        assert Prop.PUSH_REPLY_TIME not in stored.properties
    assert await max_offset(json_client, broker, REPLY_TOPIC, 0) == before + 2
    assert [p.code for p in req.pushed] == [C.PUSH_REPLY_MESSAGE_TO_CLIENT] * 2
    assert [p.body for p in req.pushed] == [b"answer-v2", b"answer-v1"]
    push = req.pushed[0]
    assert set(push.ext_fields) == PUSH_KEYS
    hdr = ReplyMessageRequestHeader.from_ext(push.ext_fields)
    assert (hdr.topic, hdr.producer_group, hdr.store_host) == (REPLY_TOPIC, "pg_replier", broker)
    assert hdr.born_host.startswith("127.0.0.1:")
    props = decode_properties(hdr.properties)
    assert props[Prop.REPLY_TO_CLIENT] == req.client_id
    assert props[Prop.MSG_TYPE] == "reply" and int(props[Prop.PUSH_REPLY_TIME]) > 0


async def test_a_reply_nobody_can_take_gets_apaches_answers(
    broker: str, json_client: RemotingClient, requesters: list[Requester]
) -> None:
    """pushReplyMessage's three failures, each SYSTEM_ERROR with 4.9.8's remark; the reply
    is stored all the same (its msgId in the answer), and the broker serves on."""
    gone = Requester("10.0.0.2@gone")
    refusing = Requester("10.0.0.3@refusing", code=1)
    requesters += [gone, refusing]
    await gone.join(broker)
    await refusing.join(broker)
    assert (await json_client.invoke(broker, reply(gone.client_id, b"x"))).code == 0
    await gone.client.close()  # the broker forgets its channel as the connection closes

    async def answer() -> RemotingCommand:
        return await json_client.invoke(broker, reply(gone.client_id, b"late"))

    resp = await answer()
    failed_push = f"push reply message to {gone.client_id}fail."
    async with asyncio.timeout(60):
        # until the broker has seen the close; meanwhile a push may fail on the closing
        # connection, which is answered as Java's failed write
        while resp.code == 0 or resp.remark == failed_push:
            resp = await answer()
    assert (resp.code, resp.remark) == (
        1, f"push reply message fail, channel of <{gone.client_id}> not found.")  # fmt: skip
    assert (await view(json_client, broker, resp.ext_fields["msgId"])).body == b"late"
    never = await json_client.invoke(broker, reply("10.9.9.9@never-seen", b"x"))
    assert never.remark == "push reply message fail, channel of <10.9.9.9@never-seen> not found."
    nobody = await json_client.invoke(broker, reply(None, b"x"))
    assert (nobody.code, nobody.remark) == (1, "reply message properties[REPLY_TO_CLIENT] is null")
    refused = await json_client.invoke(broker, reply(refusing.client_id, b"x"))
    # compat: Java's remark, without a space before "fail"
    assert (refused.code, refused.remark) == (1, f"push reply message to {refusing.client_id}fail.")
    assert len(refusing.pushed) == 1
    sent = await json_client.invoke(broker, send_v2("ReplyStillWell", b"ok"))
    assert sent.code == 0, sent.remark


async def test_a_silent_requester_holds_up_only_its_own_reply(
    broker: str, json_client: RemotingClient, requesters: list[Requester]
) -> None:
    """A requester that never answers its 326: the broker serves other sends and replies
    meanwhile, and answers the waiting replier ("... fail.") as soon as that requester's
    connection closes (Java waits out its 10 s)."""
    silent, healthy = Requester("10.0.0.4@silent", silent=True), Requester("10.0.0.5@healthy")
    requesters += [silent, healthy]
    await silent.join(broker)
    await healthy.join(broker)
    waiting = asyncio.create_task(json_client.invoke(broker, reply(silent.client_id, b"s"), 15))
    await asyncio.wait_for(silent.asked.wait(), 5)
    assert (await json_client.invoke(broker, send_v2("ReplyStillWell", b"ok"))).code == 0
    other = await json_client.invoke(broker, reply(healthy.client_id, b"h"))
    assert (other.code, len(healthy.pushed)) == (0, 1)
    assert not waiting.done()
    await silent.client.close()
    resp = await asyncio.wait_for(waiting, 5)
    assert (resp.code, resp.remark) == (1, f"push reply message to {silent.client_id}fail.")


async def test_store_reply_message_enable_false_pushes_only(
    broker: str, json_client: RemotingClient, requesters: list[Requester]
) -> None:
    """storeReplyMessageEnable=false (a key UPDATE_BROKER_CONFIG changes at once): pushed,
    answered with msgId "0" and offset 0 (handlePushReplyResult), nothing stored."""
    req = Requester("10.0.0.6@unstored")
    requesters.append(req)
    await req.join(broker)

    def update(value: str) -> RemotingCommand:
        text = f"storeReplyMessageEnable={value}\n".encode()
        return RemotingCommand.request(C.UPDATE_BROKER_CONFIG, {}, text)

    assert (await json_client.invoke(broker, update("false"))).code == 0
    try:
        before = await max_offset(json_client, broker, REPLY_TOPIC, 0)
        resp = await json_client.invoke(broker, reply(req.client_id, b"pushed only"))
        assert resp.code == 0, resp.remark
        assert (resp.ext_fields["msgId"], resp.ext_fields["queueOffset"]) == ("0", "0")
        assert await max_offset(json_client, broker, REPLY_TOPIC, 0) == before
        assert [p.body for p in req.pushed] == [b"pushed only"]
    finally:
        assert (await json_client.invoke(broker, update("true"))).code == 0


async def test_the_reply_topic_is_routed(
    reply_cluster: tuple[Cluster, BrokerProc], json_client: RemotingClient
) -> None:
    """TopicConfigManager: <cluster>_REPLY_TOPIC on every broker from its start, 1 queue,
    perm 6, in the name server's route (a replier finds it there)."""
    cluster, _broker = reply_cluster
    route: TopicRouteData | None = None

    async def routed() -> bool:
        nonlocal route
        resp = await json_client.invoke(cluster.namesrv_addr, api.get_route(REPLY_TOPIC))
        route = api.parse_route(resp) if resp.code == 0 else None
        return route is not None

    async with asyncio.timeout(10):
        while not await routed():  # noqa: ASYNC110 -- the state of another process
            await asyncio.sleep(0.05)
    assert route is not None
    [queues] = route.queue_datas
    assert (queues.broker_name, queues.read_queue_nums, queues.write_queue_nums, queues.perm) == (
        "broker-r", 1, 1, 6)  # fmt: skip


async def test_a_request_is_stamped_with_its_cluster(
    broker: str, json_client: RemotingClient
) -> None:
    """SendMessageProcessor adds CLUSTER to what it stores: createReplyMessage needs it."""
    sent = await json_client.invoke(broker, send_v2("ReplyRequests", b"q", queue_id=0))
    stored = await view(json_client, broker, sent.ext_fields["msgId"])
    assert stored.properties[Prop.CLUSTER] == "DefaultCluster"
