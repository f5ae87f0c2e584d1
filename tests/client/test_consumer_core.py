"""The consumers' shared core (client/consumer/member.py, issue 30): shutdown ends every task
a consumer started; a consumer that reaches no name server says so from start(); a
PullConsumer with nothing to read says so from poll()."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiorocketmq.client import Message, MessageQueue, Producer
from aiorocketmq.client.consumer.lite.consumer import PullConsumer
from aiorocketmq.client.consumer.push.consumer import PushConsumer
from aiorocketmq.client.consumer.types import ConsumeConcurrentlyContext, ConsumeStatus
from aiorocketmq.client.core import api
from aiorocketmq.client.core.errors import MQClientError, MQConnectionError
from aiorocketmq.client.core.instance import ClientInstance
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.message import MessageExt
from tests.client.conftest import create_everywhere
from tests.cluster import Cluster, running
from tests.util import wait_until

# a bound on start() for a test that would otherwise hang: far above the 3 s a name server
# gets, so a busy machine cannot fail it
START_BOUND = 60.0


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with running(tmp_path, ("broker-a",)) as c:
        yield c


@pytest.fixture
def dead_addr() -> str:
    """An address where nothing listens: a port bound, then let go."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"127.0.0.1:{port}"


def _others() -> set[asyncio.Task[object]]:
    return asyncio.all_tasks() - {asyncio.current_task()}


async def test_shutdown_ends_the_delayed_commit_of_a_moved_offset(cluster: Cluster) -> None:
    """A pull finding its offset illegal (beyond the queue's end) drops the queue and, 10 s
    later, commits the broker's next offset (pullMessage's OFFSET_ILLEGAL). A shutdown
    before then ends that task too: nothing of the consumer runs after shutdown() returns
    (it was a task nobody owned, committing through a released instance)."""
    await create_everywhere(cluster, "CoreMoved", 1)
    async with Producer("pg_core", namesrv_addr=cluster.namesrv_addr) as p:
        await p.send(Message("CoreMoved", b"one"))
    mq = MessageQueue("CoreMoved", "broker-a", 0)
    broker = cluster.brokers["broker-a"].addr
    async with RemotingClient() as cli:  # the group's committed offset: far past the end
        await cli.invoke_oneway(
            broker, api.update_consumer_offset("cg_core_moved", mq.topic, mq.queue_id, 100), 3.0
        )
        query = api.query_consumer_offset("cg_core_moved", mq.topic, 0)
        for _ in range(200):  # oneway: the broker takes it a moment later
            if api.parse_offset(await cli.invoke(broker, query)) == 100:
                break
            await asyncio.sleep(0.05)
    before = _others()

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeStatus:
        return ConsumeStatus.CONSUME_SUCCESS

    c = PushConsumer("cg_core_moved", namesrv_addr=cluster.namesrv_addr)
    c.subscribe("CoreMoved")
    c.register_message_listener(listener)
    await c.start()
    try:  # the queue taken at 100, its pull answered OFFSET_ILLEGAL: dropped
        await wait_until(lambda: mq in c.rebalance.table, 15)
        pq = c.rebalance.table[mq]
        await wait_until(lambda: pq.dropped, 15)
    finally:
        await c.shutdown()
    left = [t for t in _others() - before if not t.done()]
    assert left == [], [t.get_coro() for t in left]


async def test_a_push_consumer_without_a_name_server_raises_from_start(dead_addr: str) -> None:
    """Nothing listens at the name-server address: start() raises MQConnectionError naming
    it (aiokafka's KafkaConnectionError), not a consumer that logs and waits forever; the
    instance is released and no task of the consumer is left."""
    before = _others()
    c = PushConsumer("cg_core_no_ns", namesrv_addr=dead_addr)
    c.subscribe("CoreNowhere")
    async with asyncio.timeout(START_BOUND):
        with pytest.raises(MQConnectionError, match=dead_addr):
            await c.start()
    assert not [k for k in ClientInstance._shared if dead_addr in str(k[1])]
    left = [t for t in _others() - before if not t.done()]
    assert left == [], [t.get_coro() for t in left]


async def test_a_pull_consumer_without_a_name_server_raises_from_start(dead_addr: str) -> None:
    """The same for the lite consumer, subscribed or assigned."""
    sub = PullConsumer("cg_core_no_ns_sub", dead_addr)
    sub.subscribe("CoreNowhere")
    assigned = PullConsumer("cg_core_no_ns_assign", dead_addr)
    assigned.assign([MessageQueue("CoreNowhere", "broker-a", 0)])
    for c in (sub, assigned):
        async with asyncio.timeout(START_BOUND):
            with pytest.raises(MQConnectionError, match="no name server answered"):
                await c.start()
    assert not [k for k in ClientInstance._shared if dead_addr in str(k[1])]


async def test_poll_without_a_subscription_or_assignment_raises(dead_addr: str) -> None:
    """A started PullConsumer never given a subscription or queues raises from poll()
    (Kafka's IllegalStateException) instead of returning [] forever; it needs no name
    server to start, as the Spark connector's raw reader does not."""
    async with PullConsumer("cg_core_idle", dead_addr) as c:
        with pytest.raises(MQClientError, match="subscribe to a topic or assign queues"):
            await c.poll(0.1)
