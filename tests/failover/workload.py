"""The clients of a failover run: one process, run inside the clients' namespace
(``python -m tests.failover.workload``), with concurrent producers of our SDK recording every
send's outcome and a consumer group's member recording what it is delivered, the offsets it
commits (each acknowledged or not) and the offsets the SDK's consumer path answers. Records
go to a JSON-lines file as they happen (history.py). It prints ``{"event":
"workload_ready"}`` once the topic is on every master and routed, and stops on SIGTERM:
sends under way finish (each within its timeout), then it exits 0."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
import time
from collections import defaultdict
from pathlib import Path

import uvloop

from aiorocketmq.client import (
    Message,
    MessageQueue,
    MQBrokerError,
    MQClientError,
    Producer,
    PullConsumer,
    SendStatus,
    api,
)
from aiorocketmq.client.consumer.offsets import RemoteOffsetStore
from aiorocketmq.remoting.protocol.msgid import parse_offset_msg_id
from tests.failover.history import (
    FAILED,
    OK,
    UNCONFIRMED,
    UNKNOWN,
    Commit,
    Delivery,
    Query,
    Recorder,
    Send,
)

GROUP = "fv_cg"
COMMIT_EVERY = 0.5  # s between commit-and-query rounds of the consumer
AFTER_FAILURE = 0.1  # s a producer waits after a failed send (no hot loop while cut off)


async def setup(namesrv: str, masters: list[str], topic: str, queues: int) -> None:
    """The topic on every master, then until the name server routes it."""
    remote = api.Remote.open()
    try:
        async with asyncio.timeout(60):
            for addr in masters:
                while True:
                    with contextlib.suppress(MQClientError):
                        resp = await remote.invoke(addr, api.create_topic(topic, queues), 3.0)
                        if resp.code == 0:
                            break
                    await asyncio.sleep(0.2)
            while True:
                with contextlib.suppress(MQClientError):
                    resp = await remote.invoke(namesrv, api.get_route(topic), 3.0)
                    route = api.parse_route(resp, namesrv)
                    if {b.broker_addrs.get(0) for b in route.broker_datas} >= set(masters):
                        return
                await asyncio.sleep(0.2)
    finally:
        await remote.close()


async def produce(
    producer: Producer, topic: str, name: str, record: Recorder, stop: asyncio.Event
) -> None:
    seq = 0
    while not stop.is_set():
        key = f"{name}-{seq}"
        seq += 1
        start = time.monotonic()
        try:
            res = await producer.send(Message(topic, key.encode(), keys=key))
        except MQBrokerError as exc:
            record(Send(key, start, time.monotonic(), FAILED, detail=f"code {exc.code}"))
            await asyncio.sleep(AFTER_FAILURE)
            continue
        except MQClientError as exc:  # timed out, connection lost, no route: maybe stored
            record(Send(key, start, time.monotonic(), UNKNOWN, detail=type(exc).__name__))
            await asyncio.sleep(AFTER_FAILURE)
            continue
        host = parse_offset_msg_id(res.offset_msg_id)[0]
        outcome = OK if res.status is SendStatus.SEND_OK else UNCONFIRMED
        record(Send(key, start, time.monotonic(), outcome, res.queue.broker_name,
                    res.queue.queue_id, res.queue_offset, host, res.status.name))  # fmt: skip


class Consuming:
    """A PullConsumer of the topic (auto-commit off): deliveries recorded per queue; every
    COMMIT_EVERY seconds each queue's position (never lower than committed before) is
    committed -- into the consumer's own table (``commit(persist=False)``), then with an
    acknowledged UPDATE_CONSUMER_OFFSET to the queue's master -- and read back the SDK's way
    (RemoteOffsetStore.fetch: the master, else a slave)."""

    def __init__(self, consumer: PullConsumer, record: Recorder) -> None:
        self.consumer = consumer
        self.record = record
        self.position: dict[MessageQueue, int] = {}
        self.committed: dict[MessageQueue, int] = defaultdict(lambda: -1)

    async def poll(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                msgs = await self.consumer.poll(0.3)
            except MQClientError:
                await asyncio.sleep(0.1)
                continue
            t = time.monotonic()
            by_queue: dict[MessageQueue, list[int]] = defaultdict(list)
            for m in msgs:
                mq = MessageQueue(m.topic, m.broker_name, m.queue_id)
                by_queue[mq].append(m.queue_offset)
            for mq, offsets in by_queue.items():
                self.record(Delivery(mq.broker_name, mq.queue_id, min(offsets), max(offsets), t))
                self.position[mq] = max(self.position.get(mq, 0), max(offsets) + 1)

    async def commit_and_query(self, stop: asyncio.Event) -> None:
        instance = self.consumer.instance
        store = RemoteOffsetStore(instance, GROUP)
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), COMMIT_EVERY)
            for mq, pos in sorted(self.position.items()):
                offset = max(pos, self.committed[mq])
                # the SDK's own table first: its periodic and rebalance writes (oneway) then
                # carry this offset, never the 0 a consumer that committed nothing would write
                with contextlib.suppress(MQClientError):
                    await self.consumer.commit({mq: offset}, persist=False)
                start, ok, host = time.monotonic(), False, ""
                try:
                    host = await instance.master_addr(mq.broker_name, mq.topic)
                    req = api.update_consumer_offset(GROUP, mq.topic, mq.queue_id, offset)
                    ok = (await instance.remoting.invoke(host, req, 3.0)).code == 0
                except MQClientError:
                    pass
                self.record(Commit(mq.broker_name, mq.queue_id, offset, start,
                                   time.monotonic(), ok, host))  # fmt: skip
                if ok:
                    self.committed[mq] = offset
                start, host = time.monotonic(), self.asked(mq)
                try:
                    got = await store.fetch(mq)
                    self.record(Query(mq.broker_name, mq.queue_id, got, start,
                                      time.monotonic(), True, host))  # fmt: skip
                except MQClientError:
                    self.record(Query(mq.broker_name, mq.queue_id, -1, start,
                                      time.monotonic(), False, host))  # fmt: skip

    def asked(self, mq: MessageQueue) -> str:
        """Whom RemoteOffsetStore.fetch asks, for the record: the master in the route, else
        the slave it falls back to."""
        instance = self.consumer.instance
        found = instance.subscribe_addr(mq.broker_name, 0)
        return "" if found is None else f"{found[0]}{' (slave)' if found[1] else ''}"


async def main(args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    await setup(args.namesrv, args.masters.split(","), args.topic, args.queues)
    record = Recorder(Path(args.out))
    producers = [
        Producer(f"fv_pg{i}", args.namesrv, instance_name=f"fv_p{i}", send_msg_timeout=3000)
        for i in range(args.producers)
    ]
    consumer = PullConsumer(GROUP, args.namesrv, auto_commit=False, instance_name="fv_c")
    consumer.subscribe(args.topic)
    for p in producers:
        await p.start()
    await consumer.start()
    consuming = Consuming(consumer, record)
    print(json.dumps({"event": "workload_ready"}), flush=True)
    try:
        async with asyncio.TaskGroup() as tg:
            for i, p in enumerate(producers):
                for j in range(args.in_flight):
                    tg.create_task(produce(p, args.topic, f"p{i}s{j}", record, stop))
            tg.create_task(consuming.poll(stop))
            tg.create_task(consuming.commit_and_query(stop))
    finally:
        for p in producers:
            await p.shutdown()
        await consumer.shutdown()
        record.close()
    print(json.dumps({"event": "workload_done"}), flush=True)


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--namesrv", required=True)
    ap.add_argument("--masters", required=True, help="addresses to create the topic on")
    ap.add_argument("--topic", required=True)
    ap.add_argument("--queues", type=int, default=4)
    ap.add_argument("--out", required=True, help="the JSON-lines history file")
    ap.add_argument("--producers", type=int, default=2)
    ap.add_argument("--in-flight", type=int, default=2, help="concurrent sends per producer")
    return ap.parse_args(argv)


if __name__ == "__main__":
    uvloop.run(main(parse(sys.argv[1:])))
