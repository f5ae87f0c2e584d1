"""client.PullConsumer (lite pull, issue 15 item 7) against real processes: a name server and
two brokers. Mirrors DefaultLitePullConsumer / DefaultLitePullConsumerImpl of 4.9.8."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import defaultdict

import pytest

from aiorocketmq.client import (
    Message,
    MessageQueue,
    MessageSelector,
    MQBrokerError,
    MQClientError,
    Producer,
    PullConsumer,
    sync,
)
from aiorocketmq.client.consumer.lite.options import PullOptions
from aiorocketmq.client.consumer.lite.raw import keep_tags, record_tags, records
from aiorocketmq.client.consumer.types import ConsumeFromWhere
from aiorocketmq.client.core import api
from aiorocketmq.client.core.api import PullStatus
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.message import MessageExt, decode_records
from tests.client.conftest import create_everywhere
from tests.cluster import Cluster
from tests.util import wait_until

FIRST_OFFSET = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
FIRST: PullOptions = {"consume_from_where": FIRST_OFFSET}


async def _send(cluster: Cluster, topic: str, n: int, queue: MessageQueue | None = None,
                tags: tuple[str, ...] = ("A",)) -> None:  # fmt: skip
    async with Producer("pg_lite", namesrv_addr=cluster.namesrv_addr) as p:
        for i in range(n):
            msg = Message(topic, b"m%d" % i, tags=tags[i % len(tags)])
            await p.send(msg, queue=queue)


async def _poll_until(
    consumer: PullConsumer, n: int, limit: float = 15.0, sizes: list[int] | None = None
) -> list[MessageExt]:
    got: list[MessageExt] = []
    deadline = time.monotonic() + limit
    while len(got) < n and time.monotonic() < deadline:
        batch = await consumer.poll(0.5)
        got += batch
        if sizes is not None and batch:
            sizes.append(len(batch))
    return got


def _by_queue(msgs: list[MessageExt]) -> dict[MessageQueue, list[int]]:
    out: dict[MessageQueue, list[int]] = defaultdict(list)
    for m in msgs:
        out[MessageQueue(m.topic, m.broker_name, m.queue_id)].append(m.queue_offset)
    return out


async def _broker_offset(cluster: Cluster, group: str, mq: MessageQueue) -> int:
    async with RemotingClient() as cli:
        addr = cluster.brokers[mq.broker_name].addr
        resp = await cli.invoke(addr, api.query_consumer_offset(group, mq.topic, mq.queue_id))
        return api.parse_offset(resp) if resp.code == 0 else -1


async def test_assign_then_poll_reads_every_message_of_the_queues_in_order(
    two_brokers: Cluster,
) -> None:
    """assign + poll (PullTaskImpl, consumeRequestCache): every message of the assigned
    queues, each queue in offset order, ``broker_name`` set, at most pull_batch_size a poll."""
    await create_everywhere(two_brokers, "LiteAssign")
    await _send(two_brokers, "LiteAssign", 40)
    async with PullConsumer("lite_assign", two_brokers.namesrv_addr, **FIRST) as c:
        queues = await c.fetch_message_queues("LiteAssign")
        assert len(queues) == 8
        c.assign(queues)
        sizes: list[int] = []
        got = await _poll_until(c, 40, sizes=sizes)
        assert max(sizes) <= 10
        assert sorted(m.body for m in got) == sorted(b"m%d" % i for i in range(40))
        for mq, offsets in _by_queue(got).items():
            assert mq in queues and offsets == list(range(len(offsets)))
        assert await c.poll(0.2) == []


async def test_two_consumers_of_a_group_split_the_queues_and_read_everything(
    two_brokers: Cluster,
) -> None:
    """subscribe: the group's queues split by the rebalance (RebalanceLitePullImpl), the
    brokers told CONSUME_ACTIVELY; together the consumers read every message once."""
    await create_everywhere(two_brokers, "LiteSub")
    one = PullConsumer(
        "lite_sub", two_brokers.namesrv_addr, instance_name="c1", consume_from_where=FIRST_OFFSET
    )
    two = PullConsumer(
        "lite_sub", two_brokers.namesrv_addr, instance_name="c2", consume_from_where=FIRST_OFFSET
    )
    one.subscribe("LiteSub", "*")
    two.subscribe("LiteSub", "*")
    async with one, two:
        await wait_until(lambda: len(one.assignment()) == len(two.assignment()) == 4, 15.0)
        assert not one.assignment() & two.assignment()
        await _send(two_brokers, "LiteSub", 40)
        a, b = await asyncio.gather(_poll_until(one, 20), _poll_until(two, 20))
        assert sorted(m.body for m in a + b) == sorted(b"m%d" % i for i in range(40))
        assert set(_by_queue(a)) <= one.assignment() and set(_by_queue(b)) <= two.assignment()
        async with RemotingClient() as cli:
            addr = two_brokers.brokers["broker-a"].addr
            req = api.request(C.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "lite_sub"})
            body = (await cli.invoke(addr, req)).body.decode()
        assert '"consumeType":"CONSUME_ACTIVELY"' in body.replace(" ", "")
        assert "LiteSub" in body and "%RETRY%lite_sub" not in body


async def test_subscribe_and_assign_are_mutually_exclusive() -> None:
    """setSubscriptionType: one consumer either subscribes or assigns."""
    c = PullConsumer("lite_mix", "127.0.0.1:1")
    c.subscribe("T")
    with pytest.raises(MQClientError, match="mutually exclusive"):
        c.assign([MessageQueue("T", "b", 0)])
    with pytest.raises(MQClientError, match="not running"):
        await c.poll(0)


async def test_seek_seek_to_begin_and_seek_to_end(two_brokers: Cluster) -> None:
    """seek: what was pulled is dropped and the queue read again from the offset, which
    counts as consumed from there; out of [min, max] or an unassigned queue is refused."""
    await create_everywhere(two_brokers, "LiteSeek", queues=1)
    mq = MessageQueue("LiteSeek", "broker-a", 0)
    await _send(two_brokers, "LiteSeek", 10, queue=mq)
    # one pull of 4 at a time: a queue holding more than 1 message is not pulled again
    opts: PullOptions = {
        **FIRST,
        "pull_batch_size": 4,
        "pull_threshold_for_queue": 1,
        "auto_commit": False,
    }
    async with PullConsumer("lite_seek", two_brokers.namesrv_addr, **opts) as c:
        c.assign([mq])
        assert [m.queue_offset for m in await _poll_until(c, 10)] == list(range(10))
        await c.seek(mq, 3)
        assert [m.queue_offset for m in await _poll_until(c, 7)] == list(range(3, 10))
        await c.seek_to_begin(mq)
        assert [m.queue_offset for m in await c.poll(5.0)] == [0, 1, 2, 3]
        await c.commit()  # consumed up to 4, not up to what was read before the seek
        assert await c.committed(mq) == 4
        assert [m.queue_offset for m in await _poll_until(c, 6)] == list(range(4, 10))
        await c.seek_to_end(mq)
        assert await c.poll(0.3) == []
        await _send(two_brokers, "LiteSeek", 1, queue=mq)
        assert [m.queue_offset for m in await _poll_until(c, 1)] == [10]
        with pytest.raises(MQClientError, match="Seek offset illegal"):
            await c.seek(mq, 12)
        with pytest.raises(MQClientError, match="not in assigned list"):
            await c.seek(MessageQueue("LiteSeek", "broker-b", 0), 0)


async def test_commit_then_a_new_consumer_resumes_after_the_committed_offset(
    two_brokers: Cluster,
) -> None:
    """commitSync: what poll returned is committed (to the broker at once, ours); committed()
    and QUERY_CONSUMER_OFFSET agree; the group's next consumer starts there. With
    auto_commit, shutdown commits what poll returned."""
    await create_everywhere(two_brokers, "LiteCommit", queues=1)
    mq = MessageQueue("LiteCommit", "broker-b", 0)
    await _send(two_brokers, "LiteCommit", 12, queue=mq)
    opts: PullOptions = {**FIRST, "pull_batch_size": 5, "auto_commit": False}
    async with PullConsumer("lite_commit", two_brokers.namesrv_addr, **opts) as c:
        c.assign([mq])
        assert [m.queue_offset for m in await c.poll(10.0)] == list(range(5))
        # nothing committed yet: the broker answers 0 for a queue whose first message is in
        # memory (ConsumerManageProcessor.queryConsumerOffset)
        assert await c.committed(mq) == 0
        await c.commit()
        assert await c.committed(mq) == 5
        for _ in range(50):
            if await _broker_offset(two_brokers, "lite_commit", mq) == 5:
                break
            await asyncio.sleep(0.05)
        assert await _broker_offset(two_brokers, "lite_commit", mq) == 5
        await c.poll(10.0)  # 5..9 read, not committed
    async with PullConsumer("lite_commit", two_brokers.namesrv_addr, pull_batch_size=5) as c:
        c.assign([mq])
        assert await c.committed(mq) == 5
        assert [m.queue_offset for m in await c.poll(10.0)] == list(range(5, 10))
    # auto_commit: the second consumer's poll counts as consumed at its shutdown
    assert await _broker_offset(two_brokers, "lite_commit", mq) == 10


async def test_offsets_for_times_picks_the_first_message_stored_at_or_after(
    two_brokers: Cluster,
) -> None:
    """offsetForTimestamp (SEARCH_OFFSET_BY_TIMESTAMP): the first offset stored at or after
    the time; the max offset when every message is older."""
    await create_everywhere(two_brokers, "LiteTime", queues=1)
    mq = MessageQueue("LiteTime", "broker-a", 0)
    for _ in range(3):
        await _send(two_brokers, "LiteTime", 1, queue=mq)
        await asyncio.sleep(0.02)
    async with PullConsumer("lite_time", two_brokers.namesrv_addr) as c:
        stored = [m.store_timestamp for m in (await c.pull_raw(mq, 0, 32)).messages()]
        assert len(stored) == 3 and stored[0] < stored[1] < stored[2]
        found = await c.offsets_for_times({mq: stored[1]})
        assert found == {mq: 1}
        assert await c.offset_for_timestamp(mq, stored[1] + 1) == 2
        assert await c.offset_for_timestamp(mq, 0) == 0
        assert await c.offset_for_timestamp(mq, stored[2] + 1000) == 3


async def test_pull_raw_returns_the_records_as_the_broker_sent_them(two_brokers: Cluster) -> None:
    """Raw batch access: one PULL_MESSAGE, the body's records undecoded; no background pull.
    The broker filters by tag hash only; keep_tags / messages(expression) filter exactly."""
    await create_everywhere(two_brokers, "LiteRaw", queues=1)
    mq = MessageQueue("LiteRaw", "broker-b", 0)
    await _send(two_brokers, "LiteRaw", 6, queue=mq, tags=("A", "B"))
    async with PullConsumer("lite_raw", two_brokers.namesrv_addr) as c:
        raw = await c.pull_raw(mq, 0, 32)
        assert c.assignment() == set() and not c.tasks.tasks
        assert raw.status is PullStatus.FOUND
        assert (raw.next_begin_offset, raw.min_offset, raw.max_offset) == (6, 0, 6)
        decoded = decode_records(raw.body)
        assert [m.queue_offset for m in decoded] == list(range(6))
        assert [(m.body, m.properties) for m in raw.messages()] == [
            (m.body, m.properties) for m in decoded
        ]
        assert all(m.broker_name == "broker-b" for m in raw.messages())
        assert [record_tags(raw.body, p) for p, _ in records(raw.body)] == ["A", "B"] * 3
        only_a = decode_records(keep_tags(raw.body, "A"))
        assert [m.queue_offset for m in only_a] == [0, 2, 4]
        assert [m.queue_offset for m in raw.messages(expression="B")] == [1, 3, 5]
        tagged = await c.pull_raw(mq, 0, 32, expression="B")
        assert {m.properties["TAGS"] for m in decode_records(tagged.body)} == {"B"}
        empty = await c.pull_raw(mq, 6, 32)
        assert empty.status is PullStatus.NO_NEW_MSG and empty.body == b""
        began = time.monotonic()
        held = await c.pull_raw(mq, 6, 32, suspend_ms=300)
        assert held.status is PullStatus.NO_NEW_MSG and time.monotonic() - began < 5.0


async def test_pull_raw_many_is_pull_raw_at_each_offset(two_brokers: Cluster) -> None:
    """A window of raw pulls, all sent before any answer is awaited, answers as pull_raw at
    each offset would, in order; a broker's refusal is that pull's error, not the call's."""
    await create_everywhere(two_brokers, "LiteRawMany", queues=1)
    mq = MessageQueue("LiteRawMany", "broker-a", 0)
    await _send(two_brokers, "LiteRawMany", 7, queue=mq, tags=("A", "B"))
    pulls = [(0, 2), (2, 2), (4, 32), (7, 32), (1, 1)]
    async with PullConsumer("lite_raw_many", two_brokers.namesrv_addr) as c:
        got = await c.pull_raw_many(mq, pulls)
        want = [await c.pull_raw(mq, at, n) for at, n in pulls]
        assert got == want
        assert [r.status for r in want] == [PullStatus.FOUND] * 3 + [
            PullStatus.NO_NEW_MSG, PullStatus.FOUND,
        ]  # fmt: skip
        assert [m.queue_offset for r in want for m in r.messages()] == [0, 1, 2, 3, 4, 5, 6, 1]
        tagged = await c.pull_raw_many(mq, [(0, 32)], expression="B")
        assert [m.queue_offset for m in tagged[0].messages(expression="B")] == [1, 3, 5]  # type: ignore[union-attr]
        bad = MessageSelector.by_sql("a >")
        refused = await c.pull_raw_many(mq, [(0, 2), (2, 2)], expression=bad)
        assert [type(r) for r in refused] == [MQBrokerError, MQBrokerError]
        with pytest.raises(MQClientError, match="offset < 0"):
            await c.pull_raw_many(mq, [(0, 2), (-1, 2)])


async def test_poll_with_nothing_there_returns_empty_after_the_timeout(
    two_brokers: Cluster,
) -> None:
    """poll(timeout): [] once the timeout passes, not before and not much after; a negative
    timeout is refused; a consumer shut down does not start again."""
    await create_everywhere(two_brokers, "LiteEmpty", queues=1)
    async with PullConsumer("lite_empty", two_brokers.namesrv_addr) as c:
        c.assign(await c.fetch_message_queues("LiteEmpty"))
        began = time.monotonic()
        assert await c.poll(0.5) == []
        assert 0.45 <= time.monotonic() - began < 2.0
        with pytest.raises(ValueError, match="negative"):
            await c.poll(-1)
    with pytest.raises(MQClientError, match="started once"):  # no restart, as Java
        await c.start()


async def test_a_consumer_that_never_polls_holds_about_the_queue_threshold(
    two_brokers: Cluster,
) -> None:
    """Flow control: pulls stop while a queue holds more than pull_threshold_for_queue
    messages (checked before each pull, so one batch more at most), then go on once polled."""
    await create_everywhere(two_brokers, "LiteFlow", queues=1)
    mq = MessageQueue("LiteFlow", "broker-a", 0)
    await _send(two_brokers, "LiteFlow", 200, queue=mq)
    opts: PullOptions = {**FIRST, "pull_threshold_for_queue": 30}
    async with PullConsumer("lite_flow", two_brokers.namesrv_addr, **opts) as c:
        c.assign([mq])
        state = c.tasks.assigned[mq]
        await wait_until(lambda: state.pq.count > 30, 10.0)
        await asyncio.sleep(0.5)
        assert 30 < state.pq.count <= 40 and c.tasks.flow_controlled > 0
        got = await _poll_until(c, 200)
        assert [m.queue_offset for m in got] == list(range(200))


async def test_the_buffer_for_poll_is_bounded_by_pull_threshold_for_all(
    two_brokers: Cluster,
) -> None:
    """Flow control: no queue pulls while the buffered pulls times pull_batch_size exceed
    pull_threshold_for_all (each task checks before it pulls: one batch per queue more)."""
    await create_everywhere(two_brokers, "LiteAll", queues=1)
    queues = [MessageQueue("LiteAll", b, 0) for b in ("broker-a", "broker-b")]
    for mq in queues:
        await _send(two_brokers, "LiteAll", 100, queue=mq)
    opts: PullOptions = {**FIRST, "pull_threshold_for_all": 20}
    async with PullConsumer("lite_all", two_brokers.namesrv_addr, **opts) as c:
        c.assign(queues)
        await wait_until(lambda: len(c.tasks.buffer) * 10 > 20, 10.0)
        await asyncio.sleep(0.5)
        assert 20 < sum(len(p.msgs) for p in c.tasks.buffer) <= 20 + 10 * len(queues)
        assert len(await _poll_until(c, 200)) == 200


async def test_running_info_tells_admins_it_consumes_actively(two_brokers: Cluster) -> None:
    """GET_CONSUMER_RUNNING_INFO (307) for the group: the settings as properties
    (object2Properties), CONSUME_ACTIVELY, the subscriptions; no queue table, as Java's lite
    consumer answers."""
    await create_everywhere(two_brokers, "LiteInfo", queues=1)
    c = PullConsumer("lite_info", two_brokers.namesrv_addr, pull_batch_size=7)
    c.subscribe("LiteInfo", "TagA || TagB")
    async with c:
        req = api.request(C.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": "lite_info"})
        answer = c.instance.requests.answers[(C.GET_CONSUMER_RUNNING_INFO, "lite_info")]
        reply = answer(req)
        assert isinstance(reply, RemotingCommand)
        info = json.loads(reply.body)
    props = info["properties"]
    assert props["PROP_CONSUME_TYPE"] == "CONSUME_ACTIVELY"
    assert props["pullBatchSize"] == "7" and props["autoCommit"] == "true"
    assert props["messageModel"] == "CLUSTERING" and props["consumerGroup"] == "lite_info"
    assert [s["subString"] for s in info["subscriptionSet"]] == ["TagA || TagB"]
    assert info["mqTable"] == {}


def test_sync_facade_from_a_plain_thread(two_brokers: Cluster) -> None:
    """aiorocketmq.sync.PullConsumer: the same calls, blocking, from a thread without a loop."""
    asyncio.run(create_everywhere(two_brokers, "LiteSync", queues=1))
    mq = MessageQueue("LiteSync", "broker-a", 0)
    with sync.Producer("pg_sync", namesrv_addr=two_brokers.namesrv_addr) as p:
        for i in range(5):
            p.send(Message("LiteSync", b"s%d" % i), queue=mq)
    seen: list[int] = []
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            with sync.PullConsumer("lite_sync", two_brokers.namesrv_addr, **FIRST) as c:
                c.assign([mq])
                deadline = time.monotonic() + 15
                while len(seen) < 5 and time.monotonic() < deadline:
                    seen.extend(m.queue_offset for m in c.poll(0.5))
                c.commit()
                assert c.committed(mq) == 5
                c.seek_to_begin(mq)
                assert [m.queue_offset for m in c.poll(5.0)] == list(range(5))
                assert c.pull_raw(mq, 0, 2).next_begin_offset == 2
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            errors.append(exc)

    t = threading.Thread(target=reader)
    t.start()
    t.join(30)
    assert not t.is_alive() and not errors, errors
    assert seen == list(range(5))
