"""Fidelity D5, the broker side: GET_CONSUMER_RUNNING_INFO (307), CONSUME_MESSAGE_DIRECTLY
(309) and INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223 -> 221) go from an admin through the
broker to consumer clients and back, as AdminBrokerProcessor.callConsumer and
Broker2Client.getConsumeStatus do in 4.9.8.

The consumers are real connections: a RemotingClient with the SDK's ClientRequests routes
(client/requests.py), in a group by a HEART_BEAT, answering what the test tells them to."""

from __future__ import annotations

import asyncio
import inspect
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from aiorocketmq.client.core import api
from aiorocketmq.client.core.requests import ClientRequests
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ClientConfig
from aiorocketmq.remoting.dispatch import Route
from aiorocketmq.remoting.protocol import fastjson
from aiorocketmq.remoting.protocol.codes import LanguageCode, SerializeType
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from aiorocketmq.remoting.protocol.message import decode_record
from aiorocketmq.remoting.protocol.msgid import offset_msg_id, pack_host, parse_offset_msg_id
from tests.broker.wire import create_topic, heartbeat, send_v2
from tests.cluster import BrokerProc, Cluster
from tests.util import wait_until

Reply = Callable[[RemotingCommand], RemotingCommand]
CODES = (C.GET_CONSUMER_RUNNING_INFO, C.CONSUME_MESSAGE_DIRECTLY, C.GET_CONSUMER_STATUS_FROM_CLIENT)


class Consumer:
    """A consumer client: records every 307/309/221 the broker sends it and answers with
    ``reply`` (the SDK's own answer when there is none; no answer at all when ``silent``)."""

    def __init__(
        self, client_id: str, group: str, reply: Reply | None = None, *, silent: bool = False
    ) -> None:
        self.client_id, self.group = client_id, group
        self.asked: list[RemotingCommand] = []
        requests = ClientRequests()
        routes = dict(requests.routes())
        for code in CODES:
            if silent:
                routes[code] = Route(lambda cmd, ch: self.asked.append(cmd))
            elif reply is not None:
                requests.answers[(code, group)] = self._answer(reply)
            else:  # recorded, then ClientRequests answers as for a group it does not have
                routes[code] = Route(self._recorded(routes[code]))
        self.client = RemotingClient(ClientConfig(serialize_type=SerializeType.JSON), routes)

    def _answer(self, reply: Reply) -> Reply:
        def answer(cmd: RemotingCommand) -> RemotingCommand:
            self.asked.append(cmd)
            return reply(cmd)

        return answer

    def _recorded(
        self, route: Route
    ) -> Callable[[RemotingCommand, object], Awaitable[RemotingCommand]]:
        async def handler(cmd: RemotingCommand, ch: object) -> RemotingCommand:
            self.asked.append(cmd)
            resp = route.handler(cmd, ch)
            resp = await resp if inspect.isawaitable(resp) else resp
            assert isinstance(resp, RemotingCommand)
            return resp

        return handler

    async def join(self, addr: str, version: int | None = None) -> None:
        beat = heartbeat(self.client_id, self.group, ("CallT", "*"))
        beat.language = LanguageCode.JAVA
        if version is not None:
            beat.version = version
        assert (await self.client.invoke(addr, beat)).code == 0


@pytest.fixture
def broker(cluster: Cluster) -> BrokerProc:
    return cluster.add_broker("broker-a")


@pytest.fixture
async def consumers() -> AsyncIterator[list[Consumer]]:
    made: list[Consumer] = []
    yield made
    for c in made:
        await c.client.close()


def req(code: int, body: bytes = b"", /, **ext: str) -> RemotingCommand:
    return RemotingCommand.request(code, ext, body)


def running_info(group: str, client_id: str, **extra: str) -> RemotingCommand:
    """What mqadmin sends (GetConsumerRunningInfoRequestHeader; jstackEnable always set)."""
    return req(C.GET_CONSUMER_RUNNING_INFO, consumerGroup=group, clientId=client_id,
               jstackEnable="false", **extra)  # fmt: skip


def client_answer(cmd: RemotingCommand) -> RemotingCommand:
    """A 4.9.8 client's answer, with fields the broker must not touch."""
    body = b'{"properties":{"consumeType":"CONSUME_PASSIVELY"},"mqTable":{}}'
    resp = response_to(cmd, 0, "from the client", {"echo": str(cmd.code)}, body)
    resp.language, resp.version = LanguageCode.JAVA, 399
    return resp


def as_is(resp: RemotingCommand) -> tuple[object, ...]:
    return resp.code, resp.remark, resp.ext_fields, resp.body, resp.language, resp.version


async def test_307_reaches_the_client_verbatim_and_its_answer_comes_back_as_is(
    broker: BrokerProc, json_client: RemotingClient, consumers: list[Consumer]
) -> None:
    """fidelity D5: 307 goes to the (group, clientId) client with the admin's ext fields
    (unknown ones too) and body unchanged; the client's response (code, remark, ext, body,
    language, version) is the admin's. Our SDK's answer for a group it lacks comes back too."""
    addr = broker.addr
    c = Consumer("10.0.0.1@one", "cg", client_answer)
    plain = Consumer("10.0.0.2@two", "cg2")
    consumers += [c, plain]
    await c.join(addr)
    await plain.join(addr)
    ask = running_info("cg", c.client_id, extra="kept")
    ask.body = b"admin body"
    resp = await json_client.invoke(addr, ask, timeout=5)
    assert [(a.code, a.ext_fields, a.body) for a in c.asked] == [
        (C.GET_CONSUMER_RUNNING_INFO, ask.ext_fields, b"admin body")]  # fmt: skip
    assert as_is(resp) == as_is(client_answer(c.asked[0]))
    resp = await json_client.invoke(addr, running_info("cg2", plain.client_id), timeout=5)
    assert len(plain.asked) == 1
    assert (resp.code, resp.remark) == (1, "The Consumer Group <cg2> not exist in this consumer")


async def test_307_refusals_not_online_and_too_old(
    broker: BrokerProc, json_client: RemotingClient, consumers: list[Consumer]
) -> None:
    """fidelity D5: callConsumer's refusals -- nobody with that id in the group (or no such
    group), and a client older than V3_1_8_SNAPSHOT, which is never asked."""
    addr = broker.addr
    c, old = Consumer("10.0.0.1@one", "cg", client_answer), Consumer("10.0.0.3@old", "og")
    consumers += [c, old]
    await c.join(addr)
    await old.join(addr, version=61)  # V3_1_7
    for group, cid in (("cg", "10.0.0.9@nobody"), ("nog", c.client_id)):
        resp = await json_client.invoke(addr, running_info(group, cid))
        assert (resp.code, resp.remark) == (1, f"The Consumer <{group}> <{cid}> not online")
    resp = await json_client.invoke(addr, running_info("og", old.client_id))
    too_low = "too low to finish, please upgrade it to V3_1_8_SNAPSHOT"
    assert (resp.code, resp.remark) == (
        1,
        f"The Consumer <10.0.0.3@old> Version <V3_1_7> {too_low}",
    )
    assert c.asked == [] and old.asked == []


async def test_309_carries_the_stored_record_and_the_broker_name(
    broker: BrokerProc, json_client: RemotingClient, consumers: list[Consumer]
) -> None:
    """fidelity D5: 309's msgId (an offsetMsgId) is read from the store into the body and
    ext brokerName is added before the request goes to the client; its answer comes back as
    is. A msgId that is not one, or names no stored record, is refused (code 1) before the
    client is looked for, as in Java; an offline client is refused as for 307."""
    addr = broker.addr
    assert (await json_client.invoke(addr, create_topic("CallT", 1))).code == 0
    sent = api.parse_send(await json_client.invoke(addr, send_v2("CallT", b"direct", queue_id=0)))
    c = Consumer("10.0.0.1@one", "cg", client_answer)
    consumers.append(c)
    await c.join(addr)
    ext = {"consumerGroup": "cg", "clientId": c.client_id, "msgId": sent.offset_msg_id}
    resp = await json_client.invoke(addr, req(C.CONSUME_MESSAGE_DIRECTLY, **ext), timeout=5)
    _host, offset = parse_offset_msg_id(sent.offset_msg_id)
    stored = (await json_client.invoke(addr, api.view_message(offset))).body
    [asked] = c.asked
    assert (asked.code, asked.ext_fields) == (309, {**ext, "brokerName": "broker-a"})
    assert asked.body == stored and decode_record(asked.body).body == b"direct"
    assert as_is(resp) == as_is(client_answer(asked))
    missing = offset_msg_id(pack_host(addr), offset + 10**6)
    for msg_id, client_id in (("ZZ", c.client_id), (missing, "10.0.0.9@nobody")):
        bad = {**ext, "msgId": msg_id, "clientId": client_id}
        resp = await json_client.invoke(addr, req(C.CONSUME_MESSAGE_DIRECTLY, **bad))
        assert resp.code == 1 and "not online" not in (resp.remark or ""), resp.remark
    offline = {**ext, "clientId": "10.0.0.9@nobody"}
    resp = await json_client.invoke(addr, req(C.CONSUME_MESSAGE_DIRECTLY, **offline))
    assert (resp.code, resp.remark) == (1, "The Consumer <cg> <10.0.0.9@nobody> not online")
    assert len(c.asked) == 1


def status_answer(offsets: dict[int, int]) -> Reply:
    """A 4.9.8 client's GetConsumerStatusBody: fastjson's MessageQueue object keys."""
    rows = [({"brokerName": "broker-a", "queueId": q, "topic": "CallT"}, off)
            for q, off in offsets.items()]  # fmt: skip
    body = '{"consumerTable":{},"messageQueueTable":' + fastjson.dumps_object_keyed(rows) + "}"
    return lambda cmd: response_to(cmd, 0, body=body.encode())


def mq(queue_id: int) -> fastjson.FrozenKey:
    return fastjson.frozen_key({"brokerName": "broker-a", "queueId": queue_id, "topic": "CallT"})


def consumer_status(group: str, **extra: str) -> RemotingCommand:
    return req(C.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, topic="CallT", group=group, **extra)


async def test_223_gathers_each_clients_queue_offsets(
    broker: BrokerProc, json_client: RemotingClient, consumers: list[Consumer]
) -> None:
    """fidelity D5: 223 asks every client of the group with 221 (topic, group) and answers
    {"consumerTable":{clientId:{MessageQueue:offset}}} with Java's object keys; a client that
    refuses is left out, one with an empty table is in; clientAddr asks that client only; a
    group without clients gets "No Any Consumer online"."""
    addr = broker.addr
    one = Consumer("10.0.0.1@one", "sg", status_answer({0: 5, 1: 7}))
    refuses = Consumer("10.0.0.2@two", "sg", lambda cmd: response_to(cmd, 1, "no"))
    plain = Consumer("10.0.0.3@three", "sg")  # the SDK's answer: an empty table
    consumers += [one, refuses, plain]
    for c in consumers:
        await c.join(addr)
    resp = await json_client.invoke(addr, consumer_status("sg"), timeout=8)
    assert resp.code == 0, resp.remark
    for c in consumers:
        assert [(a.code, a.ext_fields) for a in c.asked] == [
            (221, {"topic": "CallT", "group": "sg"})]  # fmt: skip
    assert fastjson.loads(resp.body) == {
        "consumerTable": {one.client_id: {mq(0): 5, mq(1): 7}, plain.client_id: {}},
        "messageQueueTable": {},
    }
    assert b'{"brokerName":"broker-a","queueId":1,"topic":"CallT"}:7' in resp.body
    resp = await json_client.invoke(addr, consumer_status("sg", clientAddr=one.client_id))
    assert fastjson.loads(resp.body)["consumerTable"] == {one.client_id: {mq(0): 5, mq(1): 7}}
    assert [len(c.asked) for c in consumers] == [2, 1, 1]
    resp = await json_client.invoke(addr, consumer_status("nobody"))
    assert (resp.code, resp.remark) == (1, "No Any Consumer online in the consumer group: [nobody]")


@pytest.mark.slow
async def test_a_silent_client_costs_only_its_own_request_the_timeout(
    broker: BrokerProc, json_client: RemotingClient, consumers: list[Consumer]
) -> None:
    """fidelity D5: a client that never answers gets 307 its 10 s (Broker2Client.callClient's
    fixed invokeSync timeout) and then 207 CONSUME_MSG_TIMEOUT with Java's remark; a 223 to
    its group costs 5 s and carries the other client's table; the broker answers other
    requests meanwhile."""
    addr = broker.addr
    silent = Consumer("10.0.0.1@silent", "qg", silent=True)
    other = Consumer("10.0.0.2@other", "qg", status_answer({0: 3}))
    consumers += [silent, other]
    await silent.join(addr)
    await other.join(addr)
    start = time.monotonic()
    call = asyncio.create_task(
        json_client.invoke(addr, running_info("qg", silent.client_id), timeout=15)
    )
    status = asyncio.create_task(json_client.invoke(addr, consumer_status("qg"), timeout=15))
    await wait_until(lambda: len(silent.asked) == 2)
    # answered while both calls wait (they end 5 s and 10 s after start): 3 s is room for a
    # busy machine and still before either
    quick = await json_client.invoke(addr, req(C.GET_BROKER_CONFIG), timeout=3)
    assert quick.code == 0
    resp = await status
    # the 223's own 5 s, not the silent client's 10 s (below 9.5 s tells them apart with
    # room for a busy machine)
    assert 4.5 < time.monotonic() - start < 9.5
    table = fastjson.loads(resp.body)["consumerTable"]
    assert table == {other.client_id: {mq(0): 3}}
    resp = await call
    # the broker waited its 10 s for the silent client; the request's own 15 s timeout
    # is the upper bound
    assert time.monotonic() - start > 9.5
    assert resp.code == 207
    timed_out = (r"consumer <qg> <10\.0\.0\.1@silent> Timeout: wait response on the "
                 r"channel <127\.0\.0\.1:\d+> timeout, 10000\(ms\)")  # fmt: skip
    assert re.fullmatch(timed_out, resp.remark or ""), resp.remark
