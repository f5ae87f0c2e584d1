"""client.PushConsumer's ways of being used (issue 15): ``async for`` with acknowledgement,
plain (thread) listeners, a listener that raises, the sync facade, offsets reset by an
admin (INVOKE_BROKER_TO_RESET_OFFSET 222 -> RESET_CONSUMER_CLIENT_OFFSET 220), and refusals."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from aiorocketmq.client import (
    ConsumeConcurrentlyContext,
    ConsumeFromWhere,
    ConsumeStatus,
    Message,
    MessageExt,
    MQClientError,
    PushConsumer,
    sync,
)
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.command import RemotingCommand
from tests.client.conftest import create_everywhere
from tests.client.test_push import FAST, send
from tests.client.test_push import cluster as cluster  # the fixture
from tests.cluster import Cluster
from tests.util import wait_until

FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET


async def test_iteration_acknowledges_and_retries(cluster: Cluster) -> None:
    """``async for delivery in consumer``: ack() consumes; reconsume_later() sends the
    message back, so it comes again (reconsumeTimes 1); moving on acknowledges."""
    await create_everywhere(cluster, "PushIter", 2)
    c = PushConsumer("cg_iter", namesrv_addr=cluster.namesrv_addr, **FAST)
    c.subscribe("PushIter")
    got: list[tuple[bytes, int]] = []
    async with c:
        await send(cluster, "PushIter", 10, "i")
        async with asyncio.timeout(30):
            async for d in c:
                got.append((d.message.body, d.message.reconsume_times))
                if d.message.body == b"i3" and d.message.reconsume_times == 0:
                    d.reconsume_later()
                elif d.message.body != b"i5":
                    d.ack()  # i5 is acknowledged by moving on
                if len({b for b, _ in got}) == 10 and (b"i3", 1) in got:
                    break
    assert sorted(b for b, t in got if t == 0) == sorted(f"i{i}".encode() for i in range(10))
    assert [b for b, t in got if t == 1] == [b"i3"]


async def test_plain_listener_runs_in_a_thread_and_exceptions_retry(cluster: Cluster) -> None:
    """A plain function listener runs off the loop (in the consumer's pool); an exception
    counts as RECONSUME_LATER (ConsumeMessageConcurrentlyService), so the message returns."""
    await create_everywhere(cluster, "PushPlain", 1)
    threads: set[str] = set()
    seen: list[tuple[bytes, int]] = []

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeStatus:
        threads.add(threading.current_thread().name)
        for m in msgs:
            seen.append((m.body, m.reconsume_times))
            if m.body == b"p1" and m.reconsume_times == 0:
                raise RuntimeError("the listener failed")
        return ConsumeStatus.CONSUME_SUCCESS

    c = PushConsumer("cg_plain", namesrv_addr=cluster.namesrv_addr, **FAST)
    c.subscribe("PushPlain")
    c.register_message_listener(listener)
    async with c:
        await send(cluster, "PushPlain", 3, "p")
        await wait_until(lambda: (b"p1", 1) in seen, 20)
    assert threading.main_thread().name not in threads
    assert all(name.startswith("rocketmq-consume") for name in threads)
    assert sorted(seen) == [(b"p0", 0), (b"p1", 0), (b"p1", 1), (b"p2", 0)]


def test_sync_facade_with_a_listener_and_with_iteration(cluster: Cluster) -> None:
    """aiorocketmq.sync.PushConsumer from a plain thread: start/shutdown and `for` iteration."""
    asyncio.run(create_everywhere(cluster, "PushSync", 2))
    with sync.Producer("pg_sync", namesrv_addr=cluster.namesrv_addr) as p:
        for i in range(5):
            p.send(Message("PushSync", f"s{i}".encode()))
    got: list[bytes] = []
    done = threading.Event()

    def listener(msgs: list[MessageExt], ctx: object) -> ConsumeStatus:
        got.extend(m.body for m in msgs)
        if len(got) >= 5:
            done.set()
        return ConsumeStatus.CONSUME_SUCCESS

    c = sync.PushConsumer("cg_sync", namesrv_addr=cluster.namesrv_addr,
                                 consume_from_where=FIRST, **FAST)  # fmt: skip
    c.subscribe("PushSync", "*")
    c.register_message_listener(listener)
    c.start()
    try:
        assert done.wait(20)
    finally:
        c.shutdown()
    assert sorted(got) == [f"s{i}".encode() for i in range(5)]
    it = sync.PushConsumer("cg_sync_it", namesrv_addr=cluster.namesrv_addr,
                                  consume_from_where=FIRST, **FAST)  # fmt: skip
    it.subscribe("PushSync")
    with it:
        bodies = set()
        deadline = time.monotonic() + 20
        for d in it:
            bodies.add(d.message.body)
            d.ack()
            if len(bodies) == 5 or time.monotonic() > deadline:
                break
    assert bodies == {f"s{i}".encode() for i in range(5)}


async def test_admin_reset_rewinds_a_running_consumer(cluster: Cluster) -> None:
    """resetOffsetByTime (222 -> 220, ResetOffsetBody): a running consumer drops its queues,
    commits the given offsets and consumes again from there."""
    await create_everywhere(cluster, "PushReset", 2)
    got: list[bytes] = []

    async def listener(msgs: list[MessageExt], ctx: object) -> ConsumeStatus:
        got.extend(m.body for m in msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    c = PushConsumer("cg_reset", namesrv_addr=cluster.namesrv_addr, **FAST)
    c.subscribe("PushReset")
    c.register_message_listener(listener)
    async with c:
        await wait_until(lambda: len(c.rebalance.table) >= 4, 10)
        before = int(time.time() * 1000) - 60_000
        await send(cluster, "PushReset", 20, "z")
        await wait_until(lambda: len(got) == 20, 20)
        await asyncio.sleep(1.0)  # offsets committed
        async with RemotingClient() as admin:
            for broker in cluster.brokers.values():
                req = RemotingCommand.request(
                    C.INVOKE_BROKER_TO_RESET_OFFSET,
                    {"topic": "PushReset", "group": "cg_reset", "timestamp": str(before),
                     "isForce": "true"},
                )  # fmt: skip
                resp = await admin.invoke(broker.addr, req)
                assert resp.code == 0, resp.remark
        await wait_until(lambda: len(got) == 40, 30)
    assert sorted(got) == sorted([f"z{i}".encode() for i in range(20)] * 2)


async def test_refusals(cluster: Cluster) -> None:
    """Java's checks: no subscription; a second consumer of a group in one client instance;
    the reserved DEFAULT_CONSUMER group; listeners registered after start."""
    with pytest.raises(MQClientError, match="subscribe"):
        await PushConsumer("cg_none", namesrv_addr=cluster.namesrv_addr).start()
    with pytest.raises(MQClientError, match="DEFAULT_CONSUMER"):
        PushConsumer("DEFAULT_CONSUMER", namesrv_addr=cluster.namesrv_addr)
    await create_everywhere(cluster, "PushTwice", 1)
    a = PushConsumer("cg_twice", namesrv_addr=cluster.namesrv_addr)
    a.subscribe("PushTwice")
    b = PushConsumer("cg_twice", namesrv_addr=cluster.namesrv_addr)
    b.subscribe("PushTwice")
    async with a:
        with pytest.raises(MQClientError, match="created before"):
            await b.start()
        with pytest.raises(MQClientError, match="before start"):
            a.register_message_listener(lambda m, c: ConsumeStatus.CONSUME_SUCCESS)
