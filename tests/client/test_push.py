"""client.PushConsumer against real processes: a name server and two brokers (issue 15;
seed 003 pulling and long polling, seed 004 ordered consumption; protocol.md 5.2-5.5, 12.2,
12.5, 12.6)."""

from __future__ import annotations

import asyncio
import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TypedDict, Unpack

import pytest

from aiorocketmq.client import Message, MessageQueue, Producer
from aiorocketmq.client.consumer.push.consumer import PushConsumer
from aiorocketmq.client.consumer.types import (
    ConcurrentListener,
    ConsumeConcurrentlyContext,
    ConsumeFromWhere,
    ConsumeStatus,
    MessageModel,
    PushOptions,
)
from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.message import MessageExt
from tests.client.conftest import create_everywhere
from tests.cluster import Cluster, running
from tests.harness import ServerProcess
from tests.util import wait_until

FAST_DELAYS = " ".join(["1s"] * 18)  # every delay level 1 s: retries are quick to observe


class Fast(TypedDict):
    """Quick timers; every key present, so mypy allows ``**FAST`` beside other options."""

    rebalance_interval: int
    persist_consumer_offset_interval: int
    poll_name_server_interval: int
    heartbeat_broker_interval: int


FAST: Fast = {
    "rebalance_interval": 1000,
    "persist_consumer_offset_interval": 500,
    "poll_name_server_interval": 1000,  # a retry topic's second broker is seen at once
    "heartbeat_broker_interval": 1000,
}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    sets = {"messageDelayLevel": FAST_DELAYS, "rebalanceLockMaxLiveTime": "3000"}
    with running(tmp_path, ("broker-a", "broker-b"), sets) as c:
        yield c


class Collect:
    """A concurrent listener recording every delivery (body, consumer tag)."""

    def __init__(self, name: str = "", status: ConsumeStatus = ConsumeStatus.CONSUME_SUCCESS):
        self.name = name
        self.status = status
        self.msgs: list[MessageExt] = []

    async def __call__(
        self, msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext
    ) -> ConsumeStatus:
        self.msgs.extend(msgs)
        return self.status

    @property
    def bodies(self) -> list[bytes]:
        return [m.body for m in self.msgs]


def consumer(
    cluster: Cluster, group: str, topic: str, listener: ConcurrentListener,
    expression: str = "*", **opts: Unpack[PushOptions],
) -> PushConsumer:  # fmt: skip
    merged: PushOptions = {**FAST, **opts}
    c = PushConsumer(group, namesrv_addr=cluster.namesrv_addr, **merged)
    c.subscribe(topic, expression)
    c.register_message_listener(listener)
    return c


async def send(cluster: Cluster, topic: str, n: int, prefix: str = "m", **kw: object) -> None:
    async with Producer("pg_push", namesrv_addr=cluster.namesrv_addr) as p:
        for i in range(n):
            await p.send(Message(topic, f"{prefix}{i}".encode(), **kw))  # type: ignore[arg-type]


async def test_three_consumers_share_sixteen_queues(cluster: Cluster) -> None:
    """Issue 15 / protocol.md 12.6: 3 consumers of one group over 16 queues own 5, 5 and 6
    (disjoint), and together get every message; duplicates only around rebalances."""
    await create_everywhere(cluster, "PushShare", 8)
    listeners = [Collect(str(i)) for i in range(3)]
    consumers = [
        consumer(cluster, "cg_share", "PushShare", lst, instance_name=f"i{lst.name}")
        for lst in listeners
    ]
    for c in consumers:
        await c.start()
    try:

        def shares() -> list[set[MessageQueue]]:
            return [{mq for mq in c.rebalance.table if mq.topic == "PushShare"} for c in consumers]

        await wait_until(lambda: sorted(len(s) for s in shares()) == [5, 5, 6], 20)
        owned = shares()
        assert not (owned[0] & owned[1] or owned[0] & owned[2] or owned[1] & owned[2])
        assert len(owned[0] | owned[1] | owned[2]) == 16
        await send(cluster, "PushShare", 300)
        await wait_until(lambda: len({b for x in listeners for b in x.bodies}) == 300, 20)
        counts = Counter(b for x in listeners for b in x.bodies)
        dups = sum(n - 1 for n in counts.values())
        print(f"deliveries {sum(counts.values())}, duplicates {dups}")
        assert dups == 0  # no rebalance happened while these were consumed
        for lst, mine in zip(listeners, owned, strict=True):  # each got only its own queues
            assert {(m.broker_name, m.queue_id) for m in lst.msgs} <= {
                (mq.broker_name, mq.queue_id) for mq in mine
            }
    finally:
        for c in consumers:
            await c.shutdown()


async def test_a_leaving_consumer_queues_are_taken_over(cluster: Cluster) -> None:
    """NOTIFY_CONSUMER_IDS_CHANGED (protocol.md 5.4): when one consumer shuts down, the other
    owns every queue within one notify round (well before the 20 s periodic rebalance), and
    resumes from the committed offsets: nothing is lost."""
    await create_everywhere(cluster, "PushLeave", 4)
    a, b = Collect("a"), Collect("b")
    ca = consumer(cluster, "cg_leave", "PushLeave", a, rebalance_interval=20_000, instance_name="a")
    cb = consumer(cluster, "cg_leave", "PushLeave", b, rebalance_interval=20_000, instance_name="b")
    await ca.start()
    await cb.start()
    try:

        def owned(c: PushConsumer) -> int:
            return len([q for q in c.rebalance.table if q.topic == "PushLeave"])

        await wait_until(lambda: owned(ca) + owned(cb) == 8 and owned(ca) > 0, 10)
        await send(cluster, "PushLeave", 100, "x")
        await wait_until(lambda: len(set(a.bodies + b.bodies)) == 100, 20)
        await ca.shutdown()
        t0 = time.monotonic()
        await wait_until(
            lambda: len([q for q in cb.rebalance.table if q.topic == "PushLeave"]) == 8, 5
        )
        print(f"taken over in {time.monotonic() - t0:.2f} s")
        await send(cluster, "PushLeave", 100, "y")
        await wait_until(lambda: len({x for x in b.bodies if x.startswith(b"y")}) == 100, 20)
        assert {x for x in a.bodies + b.bodies if x.startswith(b"x")} == {
            f"x{i}".encode() for i in range(100)
        }
    finally:
        await cb.shutdown()
        await ca.shutdown()


async def test_broadcasting_delivers_everything_to_each(cluster: Cluster, tmp_path: Path) -> None:
    """MessageModel.BROADCASTING: every consumer gets every message; offsets kept locally."""
    await create_everywhere(cluster, "PushCast", 4)
    listeners = [Collect(str(i)) for i in range(2)]
    consumers = [
        consumer(
            cluster,
            "cg_cast",
            "PushCast",
            lst,
            message_model=MessageModel.BROADCASTING,
            instance_name=f"i{i}",
            offset_store_dir=str(tmp_path / "offsets"),
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        )
        for i, lst in enumerate(listeners)
    ]
    for c in consumers:
        await c.start()
    try:
        await wait_until(lambda: all(len(c.rebalance.table) == 8 for c in consumers), 10)
        await send(cluster, "PushCast", 50)
        want = {f"m{i}".encode() for i in range(50)}
        await wait_until(lambda: all(set(x.bodies) == want for x in listeners), 20)
    finally:
        for c in consumers:
            await c.shutdown()
    saved = list((tmp_path / "offsets").glob("*/cg_cast/offsets.json"))
    assert len(saved) == 2 and all("PushCast" in p.read_text() for p in saved)


async def test_reconsume_later_retries_then_dead_letters(cluster: Cluster) -> None:
    """protocol.md 5.5 / 12.2: RECONSUME_LATER sends the message back (CONSUMER_SEND_MSG_BACK);
    it comes again through %RETRY%<group> after the delay level with reconsumeTimes + 1, and
    after max_reconsume_times it is stored in %DLQ%<group> instead."""
    await create_everywhere(cluster, "PushRetry", 1)
    failing = Collect("f", ConsumeStatus.RECONSUME_LATER)
    c = consumer(cluster, "cg_retry", "PushRetry", failing, max_reconsume_times=2)
    await c.start()
    try:
        await wait_until(lambda: len(c.rebalance.table) >= 2, 10)
        await send(cluster, "PushRetry", 1, "r", keys="k1")
        await wait_until(lambda: len(failing.msgs) == 3, 30)
        assert [m.reconsume_times for m in failing.msgs] == [0, 1, 2]
        assert {m.topic for m in failing.msgs} == {"PushRetry"}  # the original topic shows
        assert len({m.properties["UNIQ_KEY"] for m in failing.msgs}) == 1
        dlq = await read_dlq(cluster, "cg_retry")
        assert [m.body for m in dlq] == [b"r0"]
        await asyncio.sleep(2.5)  # two more delay levels: nothing else arrives
        assert len(failing.msgs) == 3
    finally:
        await c.shutdown()


async def read_dlq(cluster: Cluster, group: str, timeout: float = 15.0) -> list[MessageExt]:
    deadline = time.monotonic() + timeout
    async with RemotingClient() as cli:
        while time.monotonic() < deadline:
            for broker in cluster.brokers.values():
                pull = api.pull_message(
                    "dlq_reader", f"%DLQ%{group}", 0, 0, sys_flag=api.FLAG_SUBSCRIPTION,
                    subscription="*", suspend_ms=0,
                )  # fmt: skip
                resp = await cli.invoke(broker.addr, pull)
                if resp.code == R.TOPIC_NOT_EXIST:  # the DLQ is on the broker that had it
                    continue
                reply = api.parse_pull(resp, broker.addr)
                if reply.status is api.PullStatus.FOUND:
                    return reply.messages()
            await asyncio.sleep(0.2)
    raise AssertionError(f"nothing in %DLQ%{group}")


async def test_tag_filtering(cluster: Cluster) -> None:
    """SubscriptionData tags (protocol.md 5.2): "TagA || TagC" gets those tags only."""
    await create_everywhere(cluster, "PushTags", 2)
    got = Collect()
    c = consumer(cluster, "cg_tags", "PushTags", got, expression="TagA || TagC")
    async with Producer("pg_tags", namesrv_addr=cluster.namesrv_addr) as p, c:
        await wait_until(lambda: len(c.rebalance.table) >= 4, 10)
        for i in range(30):
            await p.send(
                Message("PushTags", f"t{i}".encode(), tags=("TagA", "TagB", "TagC")[i % 3])
            )
        await wait_until(lambda: len(got.msgs) >= 20, 20)
        await asyncio.sleep(0.5)
    assert sorted(m.body for m in got.msgs) == sorted(
        f"t{i}".encode() for i in range(30) if i % 3 != 1
    )
    assert {m.tags for m in got.msgs} == {"TagA", "TagC"}


async def test_restart_resumes_from_the_committed_offset(cluster: Cluster) -> None:
    """Offsets (protocol.md 5.3): committed at shutdown; a restarted consumer of the group
    gets only what arrived after, and a new group starts at the end (CONSUME_FROM_LAST_OFFSET)
    or at the beginning (CONSUME_FROM_FIRST_OFFSET) once the topic is no longer young."""
    await create_everywhere(cluster, "PushResume", 4)
    first = Collect()
    async with consumer(cluster, "cg_resume", "PushResume", first):
        await send(cluster, "PushResume", 40, "a")
        await wait_until(lambda: len(set(first.bodies)) == 40, 20)
    await send(cluster, "PushResume", 20, "b")
    again = Collect()
    async with consumer(cluster, "cg_resume", "PushResume", again) as c:
        await wait_until(lambda: len(set(again.bodies)) >= 20, 20)
        await asyncio.sleep(0.5)
        assert set(again.bodies) == {f"b{i}".encode() for i in range(20)}
        assert len(c.rebalance.table) >= 8


@pytest.mark.slow
async def test_orderly_keeps_per_key_order_when_a_consumer_is_killed(cluster: Cluster) -> None:
    """Seed 004 / protocol.md 5.4 locks: 2 orderly consumers (processes) of one group; each
    key's messages go to one queue (send_orderly); one consumer is SIGKILLed mid-stream. The
    survivor takes its queues once the broker lock expires (rebalanceLockMaxLiveTime 3 s
    here) and resumes from the committed offset: every message is consumed, and within each
    process each key's sequence only increases (re-deliveries after the kill excepted: they
    start over from the commit point, never skip)."""
    await create_everywhere(cluster, "PushOrder", 4)
    args = (cluster.namesrv_addr, "PushOrder", "cg_order")
    workers = [ServerProcess(["-m", "tests.client.orderly_worker", *args, n]) for n in "ab"]
    try:
        for w in workers:
            w.wait_for("ready", 20)
        await asyncio.sleep(2.0)  # a couple of rebalance rounds: the queues are split
        keys, per_key = [f"k{i}" for i in range(8)], 60
        victim, survivor = workers

        async def produce() -> None:
            async with Producer("pg_order", namesrv_addr=cluster.namesrv_addr) as p:
                for seq in range(per_key):
                    for key in keys:
                        await p.send_orderly(Message("PushOrder", f"{key}:{seq}".encode()), key)

        sending = asyncio.create_task(produce())
        await asyncio.to_thread(victim.wait_for, "consumed", 30, 40)  # mid-stream
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait(10)
        await sending
        want = {(k, s) for k in keys for s in range(per_key)}

        def consumed() -> set[tuple[str, int]]:
            return {
                (e["key"], e["seq"])
                for w in workers
                for e in w.events
                if e.get("event") == "consumed"
            }

        await wait_until(lambda: consumed() == want, 60)
        for w in workers:
            seen: dict[str, list[int]] = {}
            for e in w.events:
                if e.get("event") == "consumed":
                    seen.setdefault(e["key"], []).append(e["seq"])
            for key, seqs in seen.items():
                assert seqs == sorted(seqs) and len(seqs) == len(set(seqs)), (key, seqs)
        replayed = sum(1 for e in survivor.events if e.get("event") == "consumed") + sum(
            1 for e in victim.events if e.get("event") == "consumed") - len(want)  # fmt: skip
        print(f"re-delivered after the kill: {replayed}")

        def queues(w: ServerProcess) -> set[str]:
            return {e["queue"] for e in w.events if e.get("event") == "consumed"}

        assert queues(victim) & queues(survivor), "the survivor took the victim's queues over"
    finally:
        for w in workers:
            w.stop()
