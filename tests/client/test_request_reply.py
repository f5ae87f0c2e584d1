"""Request-reply with the SDK against real processes (issue 33 item 2; features.md 6.1): a
requester's ``Producer.request`` gets the reply a push consumer's ``send_reply`` (or a plain
send of ``create_reply``) answers, through a name server and two brokers; a reply that does
not come is a typed timeout naming the topic and correlation id; the table of waiting
requests stays bounded and empties whatever happens; a reply for a requester that is gone
gets Apache's answer, and the broker serves on."""

from __future__ import annotations

import asyncio
import re
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from aiorocketmq import (
    ConsumeFromWhere,
    ConsumeStatus,
    Message,
    MessageExt,
    MQBrokerError,
    MQClientError,
    MQRequestTimeoutError,
    Producer,
    PushConsumer,
    create_reply,
)
from aiorocketmq.client import sync
from aiorocketmq.client.consumer.types import ConsumeConcurrentlyContext
from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ClientConfig
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import SerializeType
from aiorocketmq.remoting.protocol.message import Prop
from tests.client.conftest import create_everywhere
from tests.cluster import Cluster, running
from tests.util import wait_until

REPLY_TOPIC = "DefaultCluster_REPLY_TOPIC"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running(tmp_path_factory.mktemp("rr"), ("broker-a", "broker-b")) as c:
        yield c


class Replier:
    """A push consumer answering each request with ``re:<body>`` through its own producer
    (its own client instance: another process, as far as the brokers can tell)."""

    def __init__(self, ns: str, topic: str, *, plain_send: bool = False) -> None:
        self.requests: list[MessageExt] = []
        self.plain_send = plain_send
        self.producer = Producer(f"pg_replier_{topic}", namesrv_addr=ns, instance_name="replier")
        self.consumer = PushConsumer(
            f"cg_replier_{topic}", namesrv_addr=ns, instance_name="replier",
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            rebalance_interval=1000, poll_name_server_interval=1000,
            heartbeat_broker_interval=1000,
        )  # fmt: skip
        self.consumer.subscribe(topic, "*")
        self.consumer.register_message_listener(self.answer)

    async def answer(
        self, msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext
    ) -> ConsumeStatus:
        for msg in msgs:
            self.requests.append(msg)
            if self.plain_send:
                await self.producer.send(create_reply(msg, b"re:" + msg.body))
            else:
                await self.producer.send_reply(msg, b"re:" + msg.body)
        return ConsumeStatus.CONSUME_SUCCESS

    async def __aenter__(self) -> Replier:
        await self.producer.start()
        await self.consumer.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.consumer.shutdown()
        await self.producer.shutdown()


@pytest.fixture
async def requester(cluster: Cluster) -> AsyncIterator[Producer]:
    async with Producer("pg_requester", namesrv_addr=cluster.namesrv_addr) as p:
        yield p


async def test_a_request_gets_its_reply(cluster: Cluster, requester: Producer) -> None:
    """DefaultMQProducer.request: the reply is the replier's, with the request's correlation
    id; the request the replier saw carries CLUSTER (stamped by its broker), REPLY_TO_CLIENT
    and TTL, and the caller's message is left as it was. Prints the round trip."""
    await create_everywhere(cluster, "RRBasic", 2)
    async with Replier(cluster.namesrv_addr, "RRBasic") as replier:
        msg = Message("RRBasic", b"first", keys="k1")
        first = await requester.request(msg, 15_000)  # the replier's first rebalance
        assert first.body == b"re:first"
        assert msg.properties == {}
        seen = replier.requests[0]
        assert seen.properties[Prop.CLUSTER] == "DefaultCluster"
        assert seen.properties[Prop.REPLY_TO_CLIENT] == requester.instance.client_id
        assert seen.properties[Prop.TTL] == "15000"
        assert first.properties[Prop.CORRELATION_ID] == seen.properties[Prop.CORRELATION_ID]
        assert first.topic == REPLY_TOPIC and first.properties[Prop.MSG_TYPE] == "reply"
        assert int(first.properties[Prop.ARRIVE_TIME]) > 0
        took = []
        for i in range(20):
            start = time.perf_counter()
            got = await requester.request(Message("RRBasic", b"n%d" % i), 5000)
            took.append((time.perf_counter() - start) * 1000)
            assert got.body == b"re:n%d" % i
    print(f"request-reply round trip over {len(took)}: median {statistics.median(took):.1f} ms,"
          f" max {max(took):.1f} ms")  # fmt: skip
    assert len(requester.instance.requests.replies) == 0


async def test_a_plain_send_of_create_reply_is_a_reply(
    cluster: Cluster, requester: Producer
) -> None:
    """A reply made by create_reply and sent with ``send`` goes as 325 (MSG_TYPE=reply, as
    MQClientAPIImpl.sendMessage decides); the blocking facade's ``request`` gets it too."""
    await create_everywhere(cluster, "RRPlain", 2)
    async with Replier(cluster.namesrv_addr, "RRPlain", plain_send=True):
        got = await requester.request(Message("RRPlain", b"p"), 15_000)
        assert got.body == b"re:p"
        blocking = sync.Producer("pg_requester_sync", namesrv_addr=cluster.namesrv_addr)
        await asyncio.to_thread(blocking.start)
        try:
            reply = await asyncio.to_thread(blocking.request, Message("RRPlain", b"s"), 5000)
        finally:
            await asyncio.to_thread(blocking.shutdown)
        assert reply.body == b"re:s"


async def test_a_reply_that_does_not_come_times_out(cluster: Cluster, requester: Producer) -> None:
    """RequestTimeoutException's case: sent, no reply in time: MQRequestTimeoutError (a
    TimeoutError) naming the topic and the correlation id; nothing is left waiting. A reply
    sent after that is answered 0 by the requester and dropped (receiveReplyMessage)."""
    await create_everywhere(cluster, "RRNobody", 1)
    with pytest.raises(MQRequestTimeoutError) as caught:
        await requester.request(Message("RRNobody", b"hello?"), 500)
    err = caught.value
    assert isinstance(err, TimeoutError)
    assert err.topic == "RRNobody" and err.correlation_id in str(err)
    assert "send request message to <RRNobody> OK, but wait reply message timeout, 500 ms" in str(
        err
    )
    assert len(requester.instance.requests.replies) == 0
    late = MessageExt(topic="RRNobody", body=b"", properties={
        Prop.CLUSTER: "DefaultCluster", Prop.CORRELATION_ID: err.correlation_id,
        Prop.REPLY_TO_CLIENT: requester.instance.client_id, Prop.TTL: "500"})  # fmt: skip
    async with Producer("pg_late", namesrv_addr=cluster.namesrv_addr, instance_name="late") as p:
        result = await p.send(create_reply(late, b"too late"))
    assert result.status.name == "SEND_OK"  # pushed: the requester answered 0, kept nothing
    assert len(requester.instance.requests.replies) == 0


async def test_the_waiting_requests_are_bounded(cluster: Cluster, requester: Producer) -> None:
    """The correlation-id table holds at most ``limit`` requests: one more is refused at
    once (MQClientError), and every entry goes when its request ends, timed out or
    cancelled."""
    await create_everywhere(cluster, "RRBound", 1)
    replies = requester.instance.requests.replies
    replies.limit = 2
    try:
        waiting = [
            asyncio.create_task(requester.request(Message("RRBound", b"w"), 3000)) for _ in range(2)
        ]
        await wait_until(lambda: len(replies) == 2, 10)
        with pytest.raises(MQClientError, match="2 requests already wait for their replies"):
            await requester.request(Message("RRBound", b"x"), 3000)
        waiting[0].cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting[0]
        assert len(replies) == 1
        with pytest.raises(MQRequestTimeoutError):
            await waiting[1]
        assert len(replies) == 0
    finally:
        replies.limit = 65_536


async def test_a_reply_for_a_requester_that_is_gone(cluster: Cluster) -> None:
    """ReplyMessageProcessor: the requester shut down, so no broker has its channel: the
    reply fails with SYSTEM_ERROR "push reply message fail, channel of <id> not found." (on
    every broker tried), and the brokers serve on."""
    await create_everywhere(cluster, "RRGone", 1)
    ns = cluster.namesrv_addr
    async with Producer("pg_gone", namesrv_addr=ns, instance_name="gone") as gone:
        with pytest.raises(MQRequestTimeoutError) as caught:
            await gone.request(Message("RRGone", b"q"), 300)
        client_id = gone.instance.client_id
    request = MessageExt(topic="RRGone", body=b"q", properties={
        Prop.CLUSTER: "DefaultCluster", Prop.CORRELATION_ID: caught.value.correlation_id,
        Prop.REPLY_TO_CLIENT: client_id})  # fmt: skip
    async with Producer("pg_to_gone", namesrv_addr=ns, instance_name="to_gone") as replier:
        with pytest.raises(MQClientError) as failed:
            await replier.send_reply(request, b"anyone?")
        cause: BaseException | None = failed.value
        while cause is not None and not isinstance(cause, MQBrokerError):
            cause = cause.__cause__
        assert isinstance(cause, MQBrokerError) and cause.code == 1
        assert cause.remark == f"push reply message fail, channel of <{client_id}> not found."
        sent = await replier.send(Message("RRGone", b"still well"))
        assert sent.status.name == "SEND_OK"


async def test_a_reply_goes_to_the_broker_of_its_request(cluster: Cluster) -> None:
    """Ours (r#2435): a requester heartbeats only the brokers of its routes; ``send_reply``
    sends to the broker that stored the request, which has its heartbeat, rather than to any
    broker of the reply topic (Java's replier then hits one without it, and retries)."""
    async with RemotingClient(ClientConfig(serialize_type=SerializeType.JSON)) as cli:
        a = cluster.brokers["broker-a"].addr
        assert (await cli.invoke(a, api.create_topic("RROnlyA", 1))).code == 0
        b = cluster.brokers["broker-b"].addr
        before = await cli.invoke(b, api.queue_request(C.GET_MAX_OFFSET, REPLY_TOPIC, 0))
        ns = cluster.namesrv_addr
        async with (
            Producer("pg_only_a", namesrv_addr=ns, instance_name="only_a") as requester,
            Replier(ns, "RROnlyA"),
        ):
            assert (await requester.request(Message("RROnlyA", b"0"), 15_000)).body == b"re:0"
            assert b not in requester.instance.heard_by
            for i in range(1, 6):
                got = await requester.request(Message("RROnlyA", b"%d" % i), 5000)
                assert got.body == b"re:%d" % i
        after = await cli.invoke(b, api.queue_request(C.GET_MAX_OFFSET, REPLY_TOPIC, 0))
    assert api.parse_offset(after, b) == api.parse_offset(before, b)


def test_the_readme_example_runs_as_written(cluster: Cluster) -> None:
    """README "Python request-reply": its example runs as written (only the name-server
    address is this cluster's) and prints the reply."""
    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Python request-reply", 1)[1].split("\n## ", 1)[0]
    [code] = re.findall(r"```python\n(.*?)```", section, re.S)
    assert '"127.0.0.1:9876"' in code
    asyncio.run(create_everywhere(cluster, "ExampleTopic"))
    code = code.replace('"127.0.0.1:9876"', repr(cluster.namesrv_addr))
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                          text=True, timeout=90)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "b'price of AAPL'" in done.stdout, done.stdout
