"""The SDK's per-message shortcuts (issue 20) against the long way they replace: queue
selection's O(1) first pick, properties written out at once, the fault table updated in
place, and the concurrent consume service's own queue and wake-ups. Pure state: no servers."""

from __future__ import annotations

import asyncio
import itertools

from aiorocketmq.client.consumer.offsets import RemoteOffsetStore
from aiorocketmq.client.consumer.process_queue import ProcessQueue
from aiorocketmq.client.consumer.push.consume import ConcurrentService, Listener
from aiorocketmq.client.consumer.types import ConsumerOptions, ConsumeStatus
from aiorocketmq.client.core.fault import FAILED_LATENCY_MS, LatencyFaults
from aiorocketmq.client.core.message import Message
from aiorocketmq.client.core.publish import PublishInfo
from aiorocketmq.remoting.protocol.heartbeat import MessageQueue
from aiorocketmq.remoting.protocol.message import MessageExt, encode_properties
from aiorocketmq.remoting.protocol.route import BrokerData, QueueData, TopicRouteData

BROKERS = ("broker-a", "broker-b", "broker-c")


def _info(start: int) -> PublishInfo:
    route = TopicRouteData(
        queue_datas=[QueueData(broker_name=b, read_queue_nums=3, write_queue_nums=3, perm=6,
                               topic_sys_flag=0) for b in BROKERS],
        broker_datas=[BrokerData(cluster="c", broker_name=b, broker_addrs={0: f"10.0.0.{i}:1"})
                      for i, b in enumerate(BROKERS)],
    )  # fmt: skip
    info = PublishInfo.from_route("T", route)
    info._next = itertools.count(start)
    return info


def _long_way(
    info: PublishInfo, start: int, last: str | None, faults: LatencyFaults | None, down: set[str]
) -> MessageQueue:
    """PublishInfo.select as it was: every queue in round-robin order, then the rules."""
    n = len(info.queues)
    every = [info.queues[(start + i) % n] for i in range(n)]
    candidates = [mq for mq in every if mq.broker_name not in down] or every
    if faults is not None:
        for mq in candidates:
            if faults.available(mq.broker_name) and mq.broker_name != last:
                return mq
        best = faults.least_bad()
        for mq in candidates:
            if mq.broker_name == best and best != last:
                return mq
    for mq in candidates:
        if mq.broker_name != last:
            return mq
    return candidates[0]


def test_queue_selection_picks_what_the_long_way_picks() -> None:
    """Avoid-the-last-broker, dropped brokers and (only when enabled) latency faults, from
    every round-robin position: the O(1) first pick never changes the answer."""
    isolated = LatencyFaults(clock=lambda: 1000.0)
    isolated.update("broker-b", 0, isolation=True)
    downs = (None, {"broker-a"}, {"broker-a", "broker-c"}, set(BROKERS))
    for start, last, faults, down in itertools.product(
        range(9), (None, *BROKERS), (None, isolated, LatencyFaults()), downs
    ):
        check = None if down is None else (lambda name, d=down: name in d)
        picked = _info(start).select(last, faults, check)
        expected = _long_way(_info(start), start, last, faults, down or set())
        assert picked == expected, (start, last, faults, down)


def test_properties_written_at_once_are_encode_properties() -> None:
    """Message.wire_text (no properties of its own) is encode_properties of
    wire_properties() plus UNIQ_KEY, byte for byte."""
    for msg in (
        Message("T", b"x"),
        Message("T", b"x", tags="A", keys="k1 k2"),
        Message("T", b"x", keys=["a", "b"], delay_level=3),
        Message("T", b"x", tags=""),
    ):
        props = msg.wire_properties()
        props["UNIQ_KEY"] = "7F00000100002A9F0000000000000001"
        assert msg.wire_text("7F00000100002A9F0000000000000001") == encode_properties(props)


def test_fault_windows_follow_the_latency_tables() -> None:
    """updateFaultItem in place: under 550 ms no window, then computeNotAvailableDuration;
    a failure counts as 30 s (a 600 s window)."""
    faults = LatencyFaults(clock=lambda: 1000.0)
    for latency, start in ((549.9, 1000.0), (550, 31000.0), (100, 1000.0), (2999, 121000.0)):
        faults.update("b", latency)
        assert (faults.items["b"].latency_ms, faults.items["b"].start_ms) == (latency, start)
    faults.update("b", 3, isolation=True)
    assert faults.items["b"].latency_ms == FAILED_LATENCY_MS
    assert faults.items["b"].start_ms == 601000.0


async def test_listeners_that_wait_run_side_by_side_up_to_the_concurrency() -> None:
    """One worker goes through listeners that never wait; one that waits lets the next
    worker take the next batch, up to ``consume_concurrency`` at once; shutdown lets the
    calls under way finish."""
    options = ConsumerOptions(consume_concurrency=4)
    inside = peak = finished = 0
    release, four_inside, ten_done = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def listener(msgs: list[MessageExt], _ctx: object) -> ConsumeStatus:
        nonlocal inside, peak, finished
        inside += 1
        peak = max(peak, inside)
        if inside == 4:
            four_inside.set()
        await release.wait()
        inside -= 1
        finished += 1
        if finished == 10:
            ten_done.set()  # its worker commits the offset before the loop runs again
        return ConsumeStatus.CONSUME_SUCCESS

    offsets = RemoteOffsetStore(None, "g")  # type: ignore[arg-type]  # only its table is used
    service = ConcurrentService("g", options, Listener(listener, options), offsets, None)  # type: ignore[arg-type]
    mq, pq = MessageQueue("T", "b", 0), ProcessQueue()
    msgs = [MessageExt(topic="T", body=b"x", queue_offset=i) for i in range(10)]
    pq.put(msgs)
    service.submit(msgs, pq, mq, False)
    await asyncio.wait_for(four_inside.wait(), 5)
    await asyncio.sleep(0.01)
    assert (peak, len(service.batches)) == (4, 6)
    release.set()
    await asyncio.wait_for(ten_done.wait(), 5)
    await asyncio.sleep(0)
    assert offsets.table[mq] == 10
    release.clear()
    later = [MessageExt(topic="T", body=b"x", queue_offset=i) for i in range(10, 12)]
    pq.put(later)
    service.submit(later, pq, mq, False)
    await asyncio.sleep(0.01)
    drain = asyncio.ensure_future(service.drain(5))
    await asyncio.sleep(0.01)
    assert not drain.done() and inside == 2
    release.set()
    await asyncio.wait_for(drain, 1)
    assert inside == 0 and offsets.table[mq] == 12
